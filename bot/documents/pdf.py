"""PDF from structured content (reportlab): title, headings, paragraphs, lists, tables whose
header repeats on each page, page numbers "n / N", and a TrueType font that has French and €."""

from __future__ import annotations

import io
import re
from functools import lru_cache
from pathlib import Path
from xml.sax.saxutils import escape

from bot.documents.content import Block, ContentError, Document, inline_runs, plain

MAX_PAGES = 100

DEJAVU_DIR = Path("/usr/share/fonts/truetype/dejavu")
FONT = "DocSans"


@lru_cache(maxsize=1)
def register_fonts() -> str:
    """Registers the document font family once per process; returns which font file was used.

    DejaVu (Debian package fonts-dejavu-core) covers é è ç œ « » € and more; reportlab's bundled
    Vera is the fallback when it is not installed.
    """
    from reportlab import rl_config
    from reportlab.lib.fonts import addMapping
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    dejavu = {
        "": DEJAVU_DIR / "DejaVuSans.ttf",
        "-Bold": DEJAVU_DIR / "DejaVuSans-Bold.ttf",
        "-Italic": DEJAVU_DIR / "DejaVuSans-Oblique.ttf",
        "-BoldItalic": DEJAVU_DIR / "DejaVuSans-BoldOblique.ttf",
    }
    if all(p.is_file() for p in dejavu.values()):
        files = {k: str(v) for k, v in dejavu.items()}
        used = "DejaVuSans"
    else:
        vera_dir = Path(rl_config.__file__).parent / "fonts"
        names = {"": "Vera.ttf", "-Bold": "VeraBd.ttf", "-Italic": "VeraIt.ttf", "-BoldItalic": "VeraBI.ttf"}
        files = {k: str(vera_dir / v) for k, v in names.items()}
        used = "Vera"
    for suffix, path in files.items():
        pdfmetrics.registerFont(TTFont(FONT + suffix, path))
    addMapping(FONT, 0, 0, FONT)
    addMapping(FONT, 1, 0, FONT + "-Bold")
    addMapping(FONT, 0, 1, FONT + "-Italic")
    addMapping(FONT, 1, 1, FONT + "-BoldItalic")
    return used


class TooManyPages(Exception):
    pass


# French typography: "1 250 000 FCFA", "12 %", "« mot »" must not break across lines.
_NO_BREAK = re.compile(r"(?<=\d) (?=\d{3}\b)|(?<=\d) (?=(FCFA|XOF|F CFA|€|%|\$))|(?<=«) | (?=[»:;!?])")


def markup(text: str) -> str:
    """reportlab paragraph markup from plain text with **bold**/*italic*: everything escaped."""
    out = []
    for run, bold, italic in inline_runs(_NO_BREAK.sub("\u00a0", text)):
        piece = escape(run).replace("\n", "<br/>")
        if bold:
            piece = f"<b>{piece}</b>"
        if italic:
            piece = f"<i>{piece}</i>"
        out.append(piece)
    return "".join(out)


def _styles() -> dict[str, object]:
    from reportlab.lib import colors
    from reportlab.lib.styles import ParagraphStyle

    base = ParagraphStyle("body", fontName=FONT, fontSize=10.5, leading=14.5, spaceAfter=6)
    return {
        "title": ParagraphStyle(
            "title",
            parent=base,
            fontName=FONT + "-Bold",
            fontSize=20,
            leading=25,
            spaceAfter=6,
            textColor=colors.HexColor("#1F3A5F"),
        ),
        "subtitle": ParagraphStyle(
            "subtitle",
            parent=base,
            fontSize=12,
            leading=16,
            spaceAfter=14,
            textColor=colors.HexColor("#555555"),
        ),
        "h1": ParagraphStyle(
            "h1",
            parent=base,
            fontName=FONT + "-Bold",
            fontSize=15,
            leading=19,
            spaceBefore=12,
            spaceAfter=6,
            textColor=colors.HexColor("#1F3A5F"),
        ),
        "h2": ParagraphStyle(
            "h2",
            parent=base,
            fontName=FONT + "-Bold",
            fontSize=12.5,
            leading=16,
            spaceBefore=10,
            spaceAfter=4,
        ),
        "h3": ParagraphStyle(
            "h3", parent=base, fontName=FONT + "-Bold", fontSize=11, leading=14, spaceBefore=8, spaceAfter=3
        ),
        "body": base,
        "cell": ParagraphStyle("cell", parent=base, fontSize=9, leading=11.5, spaceAfter=0),
        "number": ParagraphStyle("number", parent=base, fontSize=9, leading=11.5, spaceAfter=0, alignment=2),
        "head_number": ParagraphStyle("head_number", fontName=FONT + "-Bold", fontSize=9, leading=11.5,
                                      textColor=colors.white, alignment=2),
        "head": ParagraphStyle(
            "head",
            parent=base,
            fontName=FONT + "-Bold",
            fontSize=9,
            leading=11.5,
            spaceAfter=0,
            textColor=colors.white,
        ),
    }


CELL_PADDING = 8.0  # left + right padding of a table cell, in points


def column_widths(block: Block, width: float, font_size: float = 9.0) -> list[float]:
    """Widths that keep every column's longest word whole when they can, then share what is
    left in proportion to how much text each column holds (so "401000" never wraps)."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    rows = ([block.columns] if block.columns else []) + list(block.rows[:300])
    ncols = max(len(r) for r in rows)
    shortest = [CELL_PADDING + 12] * ncols  # width under which a column's longest word breaks
    natural = [CELL_PADDING + 12] * ncols  # width that holds its longest cell on one line
    for n, row in enumerate(rows):
        font = FONT + "-Bold" if n == 0 and block.columns else FONT
        for i, cell in enumerate(row):
            text = plain(cell)
            if not text:
                continue
            words = text.split()
            longest_word = max(words, key=len) if words else ""
            shortest[i] = max(shortest[i], stringWidth(longest_word, font, font_size) + CELL_PADDING)
            line = max(text.split("\n"), key=len)
            natural[i] = max(natural[i], min(stringWidth(line, font, font_size), width) + CELL_PADDING)
    shortest = [min(w, width * 0.45) for w in shortest]
    if sum(natural) <= width:
        return [w * width / sum(natural) for w in natural]
    if sum(shortest) >= width:
        return [w * width / sum(shortest) for w in shortest]
    room = width - sum(shortest)
    wants = [max(nat - low, 0.0) for nat, low in zip(natural, shortest, strict=True)]
    total = sum(wants) or 1.0
    return [low + room * want / total for low, want in zip(shortest, wants, strict=True)]


_NUMBER_CELL = re.compile(r"^[+-]?\d[\d \u00a0\u202f.,]*\s*(%|FCFA|F CFA|XOF|€|\$|F)?$")


def _numeric_column(block: Block, index: int) -> bool:
    """Amounts and counts read best right-aligned."""
    cells = [r[index].strip() for r in block.rows[:300] if index < len(r) and r[index].strip()]
    return bool(cells) and all(_NUMBER_CELL.match(c) for c in cells)


def _table(block: Block, styles: dict[str, object], width: float) -> object:
    from reportlab.lib import colors
    from reportlab.platypus import Paragraph, Table, TableStyle

    ncols = max(len(block.columns), *(len(r) for r in block.rows)) if block.rows else len(block.columns)
    numeric = [_numeric_column(block, i) for i in range(ncols)]
    cell_styles = [styles["number"] if is_number else styles["cell"] for is_number in numeric]
    data = []
    if block.columns:
        data.append([
            Paragraph(markup(c), styles["head_number" if numeric[i] else "head"])
            for i, c in enumerate(block.columns)
        ])
    for row in block.rows:
        data.append([Paragraph(markup(c), cell_styles[i]) for i, c in enumerate(row)])
    col_widths = column_widths(block, width)
    table = Table(data, colWidths=col_widths, repeatRows=1 if block.columns else 0)
    style = [
        ("GRID", (0, 0), (-1, -1), 0.4, colors.HexColor("#B0B7C3")),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ("TOPPADDING", (0, 0), (-1, -1), 3),
        ("BOTTOMPADDING", (0, 0), (-1, -1), 3),
    ]
    if block.columns:
        style.append(("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#1F3A5F")))
        first_body = 1
    else:
        first_body = 0
    if len(data) > first_body + 1:
        style.append(
            ("ROWBACKGROUNDS", (0, first_body), (-1, -1), [colors.white, colors.HexColor("#F2F5F9")])
        )
    table.setStyle(TableStyle(style))
    return table


def flowables(doc: Document, width: float) -> list[object]:
    from reportlab.platypus import ListFlowable, ListItem, PageBreak, Paragraph, Spacer

    styles = _styles()
    story: list[object] = [Paragraph(markup(doc.title), styles["title"])]
    if doc.subtitle:
        story.append(Paragraph(markup(doc.subtitle), styles["subtitle"]))
    else:
        story.append(Spacer(1, 8))
    for block in doc.blocks:
        if block.type == "heading":
            story.append(Paragraph(markup(block.text), styles[f"h{block.level}"]))
        elif block.type == "paragraph":
            for part in block.text.split("\n\n"):
                if part.strip():
                    story.append(Paragraph(markup(part), styles["body"]))
        elif block.type == "bullets":
            items = [ListItem(Paragraph(markup(i), styles["body"])) for i in block.items]
            if items:
                story.append(
                    ListFlowable(
                        items,
                        bulletType="1" if block.ordered else "bullet",
                        start=None if block.ordered else "•",
                        bulletFontName=FONT,
                        bulletFontSize=10,
                        leftIndent=16,
                    )
                )
        elif block.type == "table":
            story.append(_table(block, styles, width))
            story.append(Spacer(1, 8))
        elif block.type == "page_break":
            story.append(PageBreak())
    return story


def _numbered_canvas(max_pages: int, counted: list[int]) -> type:
    from reportlab.pdfgen import canvas

    class NumberedCanvas(canvas.Canvas):
        """Draws "n / N" on each page once N is known; stops past `max_pages`."""

        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            self._pages: list[dict[str, object]] = []

        def showPage(self) -> None:
            self._pages.append(dict(self.__dict__))
            if len(self._pages) > max_pages:
                raise TooManyPages(len(self._pages))
            self._startPage()

        def save(self) -> None:
            total = len(self._pages)
            counted.append(total)
            for state in self._pages:
                self.__dict__.update(state)
                self.setFont(FONT, 8.5)
                self.setFillGray(0.4)
                width = self._pagesize[0]
                self.drawRightString(width - 18 * 2.835, 10 * 2.835, f"{self._pageNumber} / {total}")
                super().showPage()
            super().save()

    return NumberedCanvas


def build_pdf(doc: Document, *, max_pages: int = MAX_PAGES) -> tuple[bytes, int]:
    """The PDF's bytes and its page count. ContentError when it would pass `max_pages`."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.units import mm
    from reportlab.platypus import SimpleDocTemplate
    from reportlab.platypus.doctemplate import LayoutError

    register_fonts()
    out = io.BytesIO()
    template = SimpleDocTemplate(
        out,
        pagesize=A4,
        leftMargin=18 * mm,
        rightMargin=18 * mm,
        topMargin=18 * mm,
        bottomMargin=18 * mm,
        title=doc.title,
        author="Deblo",
        subject=doc.subtitle or doc.title,
        creator="Deblo",
    )
    counted: list[int] = []
    try:
        template.build(flowables(doc, template.width), canvasmaker=_numbered_canvas(max_pages, counted))
    except TooManyPages:
        raise ContentError(
            f"the PDF would have more than {max_pages} pages: shorten the text or the tables, "
            "or split it into several documents"
        ) from None
    except LayoutError:
        raise ContentError("a table cell or paragraph is too long to fit on one page: split it") from None
    return out.getvalue(), counted[-1] if counted else 0
