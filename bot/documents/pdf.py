"""PDF from structured content (reportlab): title, headings kept with what follows, paragraphs,
lists, tables whose header repeats on each page (on landscape pages when they are too wide for
portrait), page numbers "n / N", A4, the reader's language, and TrueType fonts that have French,
€ and emoji."""

from __future__ import annotations

import io
import re
from functools import lru_cache
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from bot.documents.content import (
    NUMERIC_KINDS,
    Block,
    ContentError,
    Document,
    cell_kind,
    column_types,
    fit_widths,
    inline_runs,
    language_tag,
    plain,
)
from bot.documents.errors import DocumentError

MAX_PAGES = 100

DEJAVU_DIR = Path("/usr/share/fonts/truetype/dejavu")
FONT = "DocSans"
# Emoji and pictographs DejaVu lacks are drawn with Symbola (Debian package fonts-symbola), whose
# glyphs are outlines reportlab can embed; colour emoji fonts are bitmaps it cannot.
SYMBOLA = Path("/usr/share/fonts/truetype/ancient-scripts/Symbola_hint.ttf")
SYMBOLS_FONT = "DocSymbols"


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
    if SYMBOLA.is_file():
        _fix_to_unicode()
        pdfmetrics.registerFont(TTFont(SYMBOLS_FONT, str(SYMBOLA)))
        for bold in (0, 1):
            for italic in (0, 1):
                addMapping(SYMBOLS_FONT, bold, italic, SYMBOLS_FONT)
    return used


_WIDE_CODE = re.compile(r"<([0-9A-F]{2})> <([0-9A-F]{5,6})>")


def _fix_to_unicode() -> None:
    """reportlab writes characters past U+FFFF (emoji) in a font's ToUnicode map as five hex
    digits, which readers take as UTF-16 and misread: copied or searched, 🚀 became « Ὠ ».
    They are written as the UTF-16 surrogate pairs the PDF format expects."""
    from reportlab.pdfbase import ttfonts

    original = ttfonts.makeToUnicodeCMap
    if getattr(original, "utf16", False):
        return

    def to_unicode_cmap(fontname: str, subset: Any) -> str:
        def pair(m: re.Match[str]) -> str:
            return f"<{m[1]}> <{chr(int(m[2], 16)).encode('utf-16-be').hex().upper()}>"

        return _WIDE_CODE.sub(pair, original(fontname, subset))

    to_unicode_cmap.utf16 = True  # type: ignore[attr-defined]  # the mark read above: patched once
    ttfonts.makeToUnicodeCMap = to_unicode_cmap


@lru_cache(maxsize=1)
def _coverage() -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
    """Characters each font draws: regular, bold, symbols (empty without Symbola)."""
    from reportlab.pdfbase import pdfmetrics

    register_fonts()
    symbols = pdfmetrics.getFont(SYMBOLS_FONT).face.charToGlyph if SYMBOLA.is_file() else {}
    regular, bold = pdfmetrics.getFont(FONT).face, pdfmetrics.getFont(FONT + "-Bold").face
    return regular.charToGlyph, bold.charToGlyph, symbols


class TooManyPages(DocumentError):
    pass


# Joiners, presentation selectors and skin tones shape colour emoji; drawn alone they are boxes.
_EMOJI_GLUE = re.compile("[\u200d\ufe0e\ufe0f\u20e3\U0001f3fb-\U0001f3ff]")
_BEYOND_TEXT = re.compile("[^\x00-\u1fff]")


def _glyphs(text: str, bold: bool) -> str:
    """Escaped reportlab markup of `text`: characters the body font lacks are drawn with the
    symbols font when it has them, and left out otherwise (never an empty box)."""
    if not _BEYOND_TEXT.search(text):
        return escape(text)
    regular, bold_map, symbols = _coverage()
    body = bold_map if bold else regular
    out: list[str] = []
    in_symbols = False
    for char in _EMOJI_GLUE.sub("", text):
        code = ord(char)
        if code < 0x2000 or code in body:
            if in_symbols:
                out.append("</font>")
                in_symbols = False
            out.append(escape(char))
        elif code in symbols:
            if not in_symbols:
                out.append(f'<font name="{SYMBOLS_FONT}">')
                in_symbols = True
            out.append(escape(char))
    if in_symbols:
        out.append("</font>")
    return "".join(out)


# French typography: "1 250 000 FCFA", "12 %", "« mot »", "− 3 000" must not break across lines.
_NO_BREAK = re.compile(
    r"(?<=\d) (?=\d{3}\b)|(?<=\d) (?=(FCFA|XOF|F CFA|€|%|\$))|(?<=«) | (?=[»:;!?])|(?<=[−–(]) (?=\d)"
)
NBSP = "\u00a0"


def glued(text: str, *, whole: bool = False) -> str:
    """Text with non-breaking spaces where a line must not break; `whole`: no break at all
    (an amount in a table cell)."""
    text = _NO_BREAK.sub(NBSP, text).replace("\u202f", NBSP)  # reportlab breaks at U+202F
    return text.replace(" ", NBSP) if whole else text


def markup(text: str, *, whole: bool = False) -> str:
    """reportlab paragraph markup from plain text with **bold**/*italic*: everything escaped."""
    out = []
    for run, bold, italic in inline_runs(glued(text, whole=whole)):
        piece = _glyphs(run, bold).replace("\n", "<br/>")
        if bold:
            piece = f"<b>{piece}</b>"
        if italic:
            piece = f"<i>{piece}</i>"
        out.append(piece)
    return "".join(out)


def _styles() -> dict[str, Any]:
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
        # A quotation: set apart by its indent, italics and grey.
        "quote": ParagraphStyle(
            "quote",
            parent=base,
            fontName=FONT + "-Italic",
            leftIndent=22,
            rightIndent=12,
            textColor=colors.HexColor("#444444"),
        ),
    }


# reportlab's default cell padding (LEFTPADDING and RIGHTPADDING are 6 pt each), and a hair more
# so that a piece exactly as wide as its column is not pushed to a second line by rounding.
CELL_PADDING = 12.0
FIT_SLACK = 1.0
BODY_SIZE = 9.0
# Table font sizes tried in turn on landscape pages before a text column has to break words.
LANDSCAPE_SIZES = (9.0, 8.0, 7.0, 6.0)
_BREAKS = re.compile(r"[ \t]+")


def _whole(kind: str, text: str) -> bool:
    """An amount in a column of amounts: drawn on one line whatever its spaces."""
    return kind in NUMERIC_KINDS and cell_kind(text) != "text"


def _measure(block: Block, kinds: list[str], size: float) -> tuple[list[float], list[float]]:
    """Per column: the width of its widest unbreakable piece (a word, a whole amount) and of its
    widest line, each with the cell padding, measured on the text exactly as it is drawn."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    ncols = len(kinds)
    shortest = [CELL_PADDING + FIT_SLACK + size] * ncols
    natural = list(shortest)
    rows = ([(block.columns, True)] if block.columns else []) + [(r, False) for r in block.rows]
    for row, is_header in rows:
        for i, cell in enumerate(row):
            if not cell:
                continue
            text = plain(cell)
            bold = is_header or "**" in cell
            font = FONT + "-Bold" if bold else FONT
            whole = not is_header and _whole(kinds[i], text)
            for line in glued(text, whole=whole).split("\n"):
                pieces = _BREAKS.split(line)
                widest = max(stringWidth(p, font, size) for p in pieces)
                shortest[i] = max(shortest[i], widest + CELL_PADDING + FIT_SLACK)
                if len(pieces) > 1:
                    widest = stringWidth(line, font, size)
                natural[i] = max(natural[i], widest + CELL_PADDING + FIT_SLACK)
    return shortest, natural


def table_layout(
    block: Block, kinds: list[str], portrait: float, landscape: float
) -> tuple[bool, float, list[float]]:
    """(landscape?, font size, column widths): portrait when every word and amount fits whole,
    else landscape with the largest font that fits; past that, only text columns break words."""
    shortest, natural = _measure(block, kinds, BODY_SIZE)
    if sum(shortest) <= portrait:
        return False, BODY_SIZE, fit_widths(shortest, natural, portrait)
    for size in LANDSCAPE_SIZES:
        if size != BODY_SIZE:
            shortest, natural = _measure(block, kinds, size)
        if sum(shortest) <= landscape:
            return True, size, fit_widths(shortest, natural, landscape)
    # Amounts keep their width; text columns share what is left, down to a narrow minimum.
    numeric = [k in NUMERIC_KINDS for k in kinds]
    fixed = sum(w for w, n in zip(shortest, numeric, strict=True) if n)
    texts = [w for w, n in zip(shortest, numeric, strict=True) if not n]
    room = max(landscape - fixed, 30.0 * len(texts))
    scale = min(1.0, room / sum(texts)) if texts else 1.0
    widths = [w if n else max(w * scale, 30.0) for w, n in zip(shortest, numeric, strict=True)]
    return True, LANDSCAPE_SIZES[-1], fit_widths(widths, widths, max(landscape, sum(widths)))


def _cell_styles(size: float) -> dict[str, Any]:
    from reportlab.lib import colors
    from reportlab.lib.styles import ParagraphStyle

    leading = round(size * 1.28, 1)
    cell = ParagraphStyle("cell", fontName=FONT, fontSize=size, leading=leading, spaceAfter=0)
    head = ParagraphStyle("head", parent=cell, fontName=FONT + "-Bold", textColor=colors.white)
    return {
        "cell": cell,
        "number": ParagraphStyle("number", parent=cell, alignment=2),
        "head": head,
        "head_number": ParagraphStyle("head_number", parent=head, alignment=2),
    }


def _table(block: Block, kinds: list[str], size: float, widths: list[float]) -> Any:
    """Amount columns are right-aligned in every row, bold totals and « — » included, and their
    cells never break."""
    from reportlab.lib import colors
    from reportlab.platypus import Paragraph, Table, TableStyle

    styles = _cell_styles(size)
    numeric = [k in NUMERIC_KINDS for k in kinds]
    data = []
    if block.columns:
        data.append([
            Paragraph(markup(c), styles["head_number" if numeric[i] else "head"])
            for i, c in enumerate(block.columns)
        ])
    for row in block.rows:
        data.append([
            Paragraph(markup(c, whole=_whole(kinds[i], plain(c))), styles["number" if numeric[i] else "cell"])
            for i, c in enumerate(row)
        ])
    table = Table(data, colWidths=widths, repeatRows=1 if block.columns else 0)
    style: list[tuple[Any, ...]] = [
        ("GRID", (0, 0), (-1, -1), 0.4, colors.HexColor("#B0B7C3")),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ("TOPPADDING", (0, 0), (-1, -1), 3),
        ("BOTTOMPADDING", (0, 0), (-1, -1), 3),
        ("LEFTPADDING", (0, 0), (-1, -1), CELL_PADDING / 2),
        ("RIGHTPADDING", (0, 0), (-1, -1), CELL_PADDING / 2),
    ]
    first_body = 0
    if block.columns:
        style.append(("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#1F3A5F")))
        first_body = 1
    if len(data) > first_body + 1:
        style.append(
            ("ROWBACKGROUNDS", (0, first_body), (-1, -1), [colors.white, colors.HexColor("#F2F5F9")])
        )
    table.setStyle(TableStyle(style))
    return table


# Room kept under a heading for the start of what follows (about three lines or table rows).
KEEP_WITH_HEADING = 48.0


def _heading_group(headings: list[Any], width: float) -> list[Any]:
    """Headings preceded by a conditional page break, so they never end a page alone."""
    from reportlab.platypus import CondPageBreak

    if not headings:
        return []
    height = sum(h.wrap(width, 10_000)[1] + h.style.spaceBefore + h.style.spaceAfter for h in headings)
    return [CondPageBreak(height + KEEP_WITH_HEADING), *headings]


BULLETS = ("•", "◦", "▪")


def _list_flowables(block: Block, styles: dict[str, Any]) -> list[Any]:
    """List items at their nesting level, each level indented further and numbered on its own."""
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.platypus import Paragraph

    out: list[Any] = []
    counters: list[int] = []
    for item, level in zip(block.items, block.item_levels(), strict=True):
        del counters[level + 1 :]
        counters += [0] * (level + 1 - len(counters))
        counters[level] += 1
        bullet = f"{counters[level]}." if block.ordered else BULLETS[level % len(BULLETS)]
        style = ParagraphStyle(
            f"item{level}", parent=styles["body"], leftIndent=18 + 16 * level, bulletIndent=4 + 16 * level,
            spaceAfter=3, bulletFontName=FONT,
        )
        out.append(Paragraph(markup(item), style, bulletText=bullet))
    return out


def _block_flowables(block: Block, styles: dict[str, Any]) -> list[Any]:
    from reportlab.platypus import PageBreak, Paragraph

    if block.type == "paragraph":
        style = styles["quote"] if block.quote else styles["body"]
        return [Paragraph(markup(p), style) for p in block.text.split("\n\n") if p.strip()]
    if block.type == "bullets":
        return _list_flowables(block, styles)
    if block.type == "page_break":
        return [PageBreak()]
    return []


def flowables(doc: Document, width: float, landscape_width: float | None = None) -> tuple[list[Any], bool]:
    """The story, and whether its first page is landscape. A table too wide for portrait goes on
    landscape pages with the headings just before it; the pages after it are portrait again."""
    from reportlab.platypus import NextPageTemplate, PageBreak, Paragraph, Spacer
    landscape_width = landscape_width or width
    styles = _styles()
    story: list[Any] = [Paragraph(markup(doc.title), styles["title"])]
    story.append(Paragraph(markup(doc.subtitle), styles["subtitle"]) if doc.subtitle else Spacer(1, 8))
    started = False  # has anything but the title and headings been placed?
    first_landscape = False
    wide = False
    pending: list[Any] = []  # headings waiting for the block they introduce
    for block in doc.blocks:
        if block.type == "heading":
            pending.append(Paragraph(markup(block.text), styles[f"h{block.level}"]))
            continue
        parts: list[Any]
        wants_wide = False
        if block.type == "table" and (block.rows or block.columns):
            kinds = column_types(block.columns, block.rows)
            wants_wide, size, widths = table_layout(block, kinds, width, landscape_width)
            parts = [_table(block, kinds, size, widths), Spacer(1, 8)]
        else:
            parts = _block_flowables(block, styles)
            if block.type == "page_break":
                story += pending + parts
                pending = []
                continue
        if not parts:
            continue
        if wants_wide != wide:
            if not started:
                first_landscape = wants_wide
            else:  # one page break: the page_break block's just before, if there is one
                at = len(story) - 1 if isinstance(story[-1], PageBreak) else len(story)
                story[at:] = [NextPageTemplate("landscape" if wants_wide else "portrait"), PageBreak()]
            wide = wants_wide
        story += _heading_group(pending, landscape_width if wide else width) + parts
        pending, started = [], True
    story += pending
    return story, first_landscape


def _numbered_canvas(max_pages: int, counted: list[int]) -> type:
    from reportlab.pdfgen import canvas

    class NumberedCanvas(canvas.Canvas):  # type: ignore[misc]  # reportlab has no stubs here: Canvas is Any
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


def _template(out: io.BytesIO, doc: Document, first_landscape: bool) -> Any:
    """A4 pages, portrait and landscape, with the reader's language and the document's metadata."""
    from reportlab.lib.pagesizes import A4, landscape
    from reportlab.lib.units import mm
    from reportlab.platypus import BaseDocTemplate, Frame, PageTemplate

    margin = 18 * mm
    template = BaseDocTemplate(
        out,
        pagesize=A4,
        leftMargin=margin,
        rightMargin=margin,
        topMargin=margin,
        bottomMargin=margin,
        title=doc.title,
        author="Deblo",
        subject=doc.subtitle or doc.title,
        creator="Deblo",
        lang=language_tag(doc.language),
    )
    pages = []
    for name, size in (("portrait", A4), ("landscape", landscape(A4))):
        frame = Frame(margin, margin, size[0] - 2 * margin, size[1] - 2 * margin, id=name,
                      leftPadding=0, rightPadding=0, topPadding=0, bottomPadding=0)
        pages.append(PageTemplate(id=name, frames=[frame], pagesize=size))
    template.addPageTemplates(pages[::-1] if first_landscape else pages)
    return template


def frame_widths() -> tuple[float, float]:
    """Text width of a portrait and of a landscape A4 page, in points."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.units import mm

    return A4[0] - 36 * mm, A4[1] - 36 * mm


def build_pdf(doc: Document, *, max_pages: int = MAX_PAGES) -> tuple[bytes, int]:
    """The PDF's bytes and its page count. ContentError when it would pass `max_pages`."""
    from reportlab.platypus.doctemplate import LayoutError

    register_fonts()
    out = io.BytesIO()
    story, first_landscape = flowables(doc, *frame_widths())
    template = _template(out, doc, first_landscape)
    counted: list[int] = []
    try:
        template.build(story, canvasmaker=_numbered_canvas(max_pages, counted))
    except TooManyPages:
        raise ContentError(
            f"the PDF would have more than {max_pages} pages: shorten the text or the tables, "
            "or split it into several documents"
        ) from None
    except LayoutError:
        raise ContentError("a table cell or paragraph is too long to fit on one page: split it") from None
    return out.getvalue(), counted[-1] if counted else 0
