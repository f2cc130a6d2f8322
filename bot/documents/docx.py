"""Word documents (python-docx): title, headings, paragraphs with bold/italic, lists, tables."""

from __future__ import annotations

import io
from typing import Any

from bot.documents.content import Block, Document, inline_runs


def _runs(paragraph: Any, text: str) -> None:
    for run_text, bold, italic in inline_runs(text):
        run = paragraph.add_run(run_text)
        if bold:
            run.bold = True
        if italic:
            run.italic = True


def _table(document: Any, block: Block) -> None:
    from docx.shared import Pt

    ncols = max(len(block.columns), *(len(r) for r in block.rows)) if block.rows else len(block.columns)
    nrows = len(block.rows) + (1 if block.columns else 0)
    table = document.add_table(rows=nrows, cols=ncols)
    table.style = "Table Grid"
    # Writing through the row's cells list once is much faster than table.cell(r, c) per cell.
    all_rows = ([block.columns] if block.columns else []) + list(block.rows)
    for r, (row, values) in enumerate(zip(table.rows, all_rows, strict=True)):
        for cell, value in zip(row.cells, values, strict=False):
            paragraph = cell.paragraphs[0]
            if r == 0 and block.columns:
                run = paragraph.add_run(value)
                run.bold = True
            else:
                _runs(paragraph, value)
            for run in paragraph.runs:
                run.font.size = Pt(9.5)
    if block.columns:
        from docx.oxml import OxmlElement
        from docx.oxml.ns import qn

        # Repeat the header row on each page.
        tr_pr = table.rows[0]._tr.get_or_add_trPr()
        header = OxmlElement("w:tblHeader")
        header.set(qn("w:val"), "true")
        tr_pr.append(header)


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
    document.add_heading(doc.title, level=0)
    if doc.subtitle:
        document.add_paragraph(doc.subtitle, style="Subtitle")
    for block in doc.blocks:
        if block.type == "heading":
            document.add_heading(block.text, level=block.level)
        elif block.type == "paragraph":
            for part in block.text.split("\n\n"):
                if part.strip():
                    _runs(document.add_paragraph(), part)
        elif block.type == "bullets":
            style = "List Number" if block.ordered else "List Bullet"
            for item in block.items:
                _runs(document.add_paragraph(style=style), item)
        elif block.type == "table":
            _table(document, block)
            document.add_paragraph()
        elif block.type == "page_break":
            document.add_paragraph().add_run().add_break(WD_BREAK.PAGE)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
