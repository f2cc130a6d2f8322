"""Word documents (python-docx): title, headings, paragraphs with bold/italic, lists, tables."""

from __future__ import annotations

import io
from typing import Any

from bot.documents.content import Block, Document, inline_runs, language_tag

# A4 with 2.5 cm margins, as French-speaking offices print (python-docx's template is US Letter).
PAGE_WIDTH_MM, PAGE_HEIGHT_MM = 210, 297
MARGIN_MM = 25


def _runs(paragraph: Any, text: str) -> None:
    for run_text, bold, italic in inline_runs(text):
        run = paragraph.add_run(run_text)
        if bold:
            run.bold = True
        if italic:
            run.italic = True


def _table(document: Any, block: Block) -> None:
    """Columns as wide as their content needs; amounts right-aligned, in columns wide enough to
    hold each whole (the text keeps its plain spaces, so that searching it finds "45 000")."""
    from docx.enum.text import WD_ALIGN_PARAGRAPH
    from docx.shared import Emu, Pt

    from bot.documents.content import NUMERIC_KINDS, column_types

    ncols = max(len(block.columns), *(len(r) for r in block.rows)) if block.rows else len(block.columns)
    nrows = len(block.rows) + (1 if block.columns else 0)
    table = document.add_table(rows=nrows, cols=ncols)
    table.style = "Table Grid"
    table.autofit = False  # fixed layout: Word keeps the widths given below
    kinds = column_types(block.columns, block.rows)
    numeric = [k in NUMERIC_KINDS for k in kinds]
    size, emu = _table_layout(document, block, kinds)
    widths = [Emu(w) for w in emu]
    for column, width in zip(table.columns, widths, strict=True):
        column.width = width
    # Writing through the row's cells list once is much faster than table.cell(r, c) per cell.
    all_rows = ([block.columns] if block.columns else []) + list(block.rows)
    for r, (row, values) in enumerate(zip(table.rows, all_rows, strict=True)):
        is_header = r == 0 and bool(block.columns)
        for c, (cell, value) in enumerate(zip(row.cells, values, strict=False)):
            cell.width = widths[c]
            paragraph = cell.paragraphs[0]
            if numeric[c]:
                paragraph.alignment = WD_ALIGN_PARAGRAPH.RIGHT
            if is_header:
                run = paragraph.add_run(value)
                run.bold = True
            else:
                _runs(paragraph, value)
            for run in paragraph.runs:
                run.font.size = Pt(size)
    if block.columns:
        from docx.oxml import OxmlElement
        from docx.oxml.ns import qn

        # Repeat the header row on each page.
        tr_pr = table.rows[0]._tr.get_or_add_trPr()
        header = OxmlElement("w:tblHeader")
        header.set(qn("w:val"), "true")
        tr_pr.append(header)


TABLE_FONT_PT = 9.5
SMALLER_TABLE_FONTS_PT = (8.5, 7.5)  # for a table whose words and amounts do not fit at 9.5 pt
# Word's default cell margins (0.19 cm each side), in points, and EMU per point.
CELL_MARGINS_PT = 10.8
EMU_PER_PT = 12700


def _table_layout(document: Any, block: Block, kinds: list[str]) -> tuple[float, list[int]]:
    """(font size, column widths in EMU) over the text width of the page: each column at least
    its widest word or whole amount, the rest shared by what each needs for its longest line;
    a smaller font when they cannot all fit at the usual size."""
    from bot.documents.content import fit_widths

    section = document.sections[-1]
    available = (section.page_width - section.left_margin - section.right_margin) / EMU_PER_PT
    for size in (TABLE_FONT_PT, *SMALLER_TABLE_FONTS_PT):
        shortest, natural = _measure(block, kinds, size)
        if sum(shortest) <= available:
            break
    return size, [round(w * EMU_PER_PT) for w in fit_widths(shortest, natural, available)]


def _measure(block: Block, kinds: list[str], size: float) -> tuple[list[float], list[float]]:
    """Per column, in points: its widest unbreakable piece and its widest line. Measured with
    DejaVu Sans, wider than Calibri and than what viewers without Calibri draw with, so that
    the text fits whichever font the reader's application uses."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    from bot.documents.content import NUMERIC_KINDS, plain
    from bot.documents.pdf import FONT, register_fonts

    register_fonts()
    shortest = [CELL_MARGINS_PT + size] * len(kinds)
    natural = list(shortest)
    rows = ([(block.columns, True)] if block.columns else []) + [(r, False) for r in block.rows]
    for row, is_header in rows:
        for i, cell in enumerate(row):
            text = plain(cell)
            if not text:
                continue
            font = FONT + "-Bold" if is_header or "**" in cell else FONT
            for line in text.split("\n"):
                whole = stringWidth(line, font, size) + CELL_MARGINS_PT + 1
                natural[i] = max(natural[i], whole)
                if kinds[i] in NUMERIC_KINDS and not is_header:
                    shortest[i] = max(shortest[i], whole)  # an amount is never broken
                else:
                    widest = max(stringWidth(w, font, size) for w in line.split(" "))
                    shortest[i] = max(shortest[i], widest + CELL_MARGINS_PT + 1)
    return shortest, natural


def _page_setup(document: Any) -> None:
    from docx.shared import Mm

    for section in document.sections:
        section.page_width, section.page_height = Mm(PAGE_WIDTH_MM), Mm(PAGE_HEIGHT_MM)
        section.left_margin = section.right_margin = Mm(MARGIN_MM)
        section.top_margin = section.bottom_margin = Mm(MARGIN_MM)


def _set_language(document: Any, tag: str) -> None:
    """The document's language in every place Word reads it (defaults, styles, settings), so it
    spell-checks French as French; French also gets its decimal comma and list separator."""
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    styles = document.styles.element
    defaults = styles.find(qn("w:docDefaults"))
    r_pr = defaults.find(qn("w:rPrDefault")).find(qn("w:rPr"))
    if r_pr.find(qn("w:lang")) is None:
        r_pr.append(OxmlElement("w:lang"))
    for lang in styles.iter(qn("w:lang")):
        lang.set(qn("w:val"), tag)
        lang.set(qn("w:eastAsia"), tag)
    settings = document.settings.element
    for name, value in (
        ("w:themeFontLang", tag),
        ("w:decimalSymbol", "," if tag.startswith("fr") else "."),
        ("w:listSeparator", ";" if tag.startswith("fr") else ","),
    ):
        element = settings.find(qn(name))
        if element is not None:
            element.set(qn("w:val"), value)
    document.core_properties.language = tag


def _quote_style(document: Any) -> str:
    """The Quote style, indented with a rule on its left as a quotation is set apart."""
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn
    from docx.shared import Cm

    style = document.styles["Quote"]
    style.paragraph_format.left_indent = Cm(1)
    borders = OxmlElement("w:pBdr")
    left = OxmlElement("w:left")
    for key, value in (("w:val", "single"), ("w:sz", "12"), ("w:space", "8"), ("w:color", "C9D0DA")):
        left.set(qn(key), value)
    borders.append(left)
    style.element.get_or_add_pPr().append(borders)
    return "Quote"


def _list(document: Any, block: Block) -> None:
    """Items at their nesting level: List Bullet / List Bullet 2 / 3 (numbered alike)."""
    from docx.shared import Cm, Pt

    base = "List Number" if block.ordered else "List Bullet"
    levels = block.item_levels()
    for n, (item, level) in enumerate(zip(block.items, levels, strict=True)):
        paragraph = document.add_paragraph(style=base if level == 0 else f"{base} {min(level + 1, 3)}")
        if level > 2:  # Word's template stops at 3 levels: deeper items are indented further
            paragraph.paragraph_format.left_indent = Cm(1.9 + 0.65 * level)
        if n + 1 < len(levels):  # one list reads as one block, whatever the levels of its items
            paragraph.paragraph_format.space_after = Pt(2)
        _runs(paragraph, item)


def build_docx(doc: Document) -> bytes:
    import docx
    from docx.enum.text import WD_BREAK
    from docx.shared import Pt

    document = docx.Document()
    document.core_properties.title = doc.title
    document.core_properties.author = "Deblo"
    normal = document.styles["Normal"]
    normal.font.name = "Calibri"
    normal.font.size = Pt(11)
    _page_setup(document)
    _set_language(document, language_tag(doc.language))
    quote = _quote_style(document)
    document.add_heading(doc.title, level=0)
    if doc.subtitle:
        document.add_paragraph(doc.subtitle, style="Subtitle")
    for block in doc.blocks:
        if block.type == "heading":
            document.add_heading(block.text, level=block.level)
        elif block.type == "paragraph":
            for part in block.text.split("\n\n"):
                if part.strip():
                    _runs(document.add_paragraph(style=quote if block.quote else None), part)
        elif block.type == "bullets":
            _list(document, block)
        elif block.type == "table":
            _table(document, block)
            document.add_paragraph()
        elif block.type == "page_break":
            document.add_paragraph().add_run().add_break(WD_BREAK.PAGE)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
