"""A file of the user's library (Markdown, Word, Excel, PowerPoint, text, CSV) as structured
content, so that any generator — the PDF one above all — can render it; and a document tool's
arguments (blocks or Markdown) checked into the same content (`parse_document`)."""

from __future__ import annotations

import csv
import io
from typing import Any

from bot.channel.maths import latex_to_text
from bot.documents.content import (
    MAX_BLOCKS,
    MAX_TABLE_CELLS,
    MAX_TABLE_COLUMNS,
    MAX_TABLE_ROWS,
    MAX_TITLE_CHARS,
    MAX_TOTAL_CHARS,
    Block,
    ContentError,
    Document,
    checked_text,
    language_of,
    parse_block,
)
from bot.documents.extract import decode_text, kind_of
from bot.documents.sheet_pdf import Converted, workbook_document

CONVERTIBLE = "Markdown, Word (.docx), Excel (.xlsx), PowerPoint (.pptx), text and CSV files"


def to_document(data: bytes, name: str, mime: str, title: str = "", language: str = "fr") -> Document:
    """The file as structured content, for a reader of `language` (fr or en)."""
    return converted(data, name, mime, title, language).document


def converted(data: bytes, name: str, mime: str, title: str = "", language: str = "fr") -> Converted:
    """The file as structured content, with the workbook formulas that could not be computed."""
    from dataclasses import replace

    language = language_of(language)
    if kind_of(name, mime) == "xlsx":
        stem = name.rsplit(".", 1)[0] if "." in name else name
        found = workbook_document(data, title or stem, language)
        return Converted(replace(found.document, language=language), found.uncomputed)
    return Converted(replace(_to_document(data, name, mime, title), language=language))


def _to_document(data: bytes, name: str, mime: str, title: str = "") -> Document:
    kind = kind_of(name, mime)
    stem = name.rsplit(".", 1)[0] if "." in name else name
    title = title or stem
    if kind == "pdf":
        raise ContentError("this file is already a PDF")
    if (kind == "text" and name.lower().endswith(".csv")) or mime.startswith("text/csv"):
        return Document(title, blocks=(_csv_table(decode_text(data)),))
    if kind in ("text", "html"):
        if kind == "html":
            from bot.documents.extract import _html

            return _markdown(_html(data), title)
        return _markdown(decode_text(data), title)
    if kind == "docx":
        return _docx(data, title)
    if kind == "pptx":
        return _pptx(data, title)
    raise ContentError(f"cannot convert this type of file ({mime}); convertible: {CONVERTIBLE}")


def _table_block(rows: list[list[str]], note: list[str]) -> Block:
    rows = [r[:MAX_TABLE_COLUMNS] for r in rows if any(c.strip() for c in r)]
    if not rows:
        return Block("paragraph", text="")
    if len(rows) > MAX_TABLE_ROWS + 1:
        note.append(f"{len(rows) - 1 - MAX_TABLE_ROWS} rows left out")
        rows = rows[: MAX_TABLE_ROWS + 1]
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    return Block("table", columns=tuple(rows[0]), rows=tuple(tuple(r) for r in rows[1:]))


def _csv_table(text: str) -> Block:
    sample = text[:4096]
    try:
        dialect: Any = csv.Sniffer().sniff(sample, delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    rows = [list(r) for r in csv.reader(io.StringIO(text), dialect)]
    return _table_block(rows, [])


def _markdown(text: str, title: str) -> Document:
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    blocks: list[Block] = []
    first_heading_is_title = False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "heading_open":
            level = int(tok.tag[1])
            content = _inline_md(tokens[i + 1])
            if level == 1 and not blocks and not first_heading_is_title:
                title, first_heading_is_title = content, True
            else:
                blocks.append(Block("heading", text=content, level=min(max(level - 1, 1), 3)))
            i += 3
            continue
        if tok.type == "paragraph_open" and tok.level == 0:
            blocks.append(Block("paragraph", text=_inline_md(tokens[i + 1])))
            i += 3
            continue
        if tok.type in ("bullet_list_open", "ordered_list_open"):
            i = _md_list(tokens, i, blocks)
            continue
        if tok.type == "blockquote_open":
            i = _md_quote(tokens, i, blocks)
            continue
        if tok.type == "table_open":
            rows: list[list[str]] = []
            j = i
            while j < len(tokens) and tokens[j].type != "table_close":
                t = tokens[j]
                if t.type == "tr_open":
                    rows.append([])
                elif t.type == "inline" and rows:
                    rows[-1].append(_inline_md(t))
                j += 1
            blocks.append(_table_block(rows, []))
            i = j + 1
            continue
        if tok.type in ("fence", "code_block"):
            blocks.append(Block("paragraph", text=tok.content.rstrip("\n")))
        elif tok.type == "hr":
            blocks.append(Block("page_break"))
        i += 1
    return Document(title, blocks=tuple(b for b in blocks if b.type != "paragraph" or b.text))


def _md_list(tokens: list[Any], i: int, blocks: list[Block]) -> int:
    """A list with its nested lists as one bullets block, each item at its nesting level; the
    paragraphs of one item stay together. Returns the index after the list."""
    depth = 0
    items: list[str] = []
    levels: list[int] = []
    item_open = False
    for j in range(i, len(tokens)):
        t = tokens[j]
        if t.type in ("bullet_list_open", "ordered_list_open"):
            depth += 1
        elif t.type in ("bullet_list_close", "ordered_list_close"):
            depth -= 1
            if depth == 0:
                break
        elif t.type == "list_item_open":
            item_open = True
        elif t.type == "inline":
            if item_open or not items:
                items.append(_inline_md(t))
                levels.append(depth - 1)
            else:  # a second paragraph of the same item
                items[-1] += "\n" + _inline_md(t)
            item_open = False
    blocks.append(
        Block(
            "bullets",
            items=tuple(items),
            ordered=tokens[i].type == "ordered_list_open",
            levels=tuple(levels) if any(levels) else (),
        )
    )
    return j + 1


def _md_quote(tokens: list[Any], i: int, blocks: list[Block]) -> int:
    """A blockquote as quoted paragraphs (nested quotes and lists inside it included: list items
    keep a dash). Returns the index after the quote."""
    depth, in_item = 0, False
    for j in range(i, len(tokens)):
        t = tokens[j]
        if t.type == "blockquote_open":
            depth += 1
        elif t.type == "blockquote_close":
            depth -= 1
            if depth == 0:
                break
        elif t.type == "list_item_open":
            in_item = True
        elif t.type == "inline" and _inline_md(t):
            text = ("– " if in_item else "") + _inline_md(t)
            blocks.append(Block("paragraph", text=text, quote=True))
            in_item = False
        elif t.type in ("fence", "code_block"):
            blocks.append(Block("paragraph", text=t.content.rstrip("\n"), quote=True))
    return j + 1


def markdown_blocks(text: str, title: str = "") -> list[dict[str, Any]]:
    """Markdown as the raw blocks a document tool takes (checked again by parse_document); a
    leading "# title" that repeats the document's title is not repeated."""
    doc = _markdown(text, "")
    blocks: list[dict[str, Any]] = []
    if doc.title and doc.title.strip().casefold() != title.strip().casefold():
        blocks.append({"type": "heading", "text": doc.title, "level": 1})
    for b in doc.blocks:
        if b.type == "heading":
            blocks.append({"type": "heading", "text": b.text, "level": b.level})
        elif b.type == "paragraph":
            blocks.append({"type": "paragraph", "text": b.text, "quote": b.quote})
        elif b.type == "bullets":
            blocks.append(
                {"type": "bullets", "items": list(b.items), "ordered": b.ordered, "levels": list(b.levels)}
            )
        elif b.type == "table":
            blocks.append({"type": "table", "columns": list(b.columns), "rows": [list(r) for r in b.rows]})
        else:
            blocks.append({"type": b.type})
    return blocks



def check_markdown_tables(text: str) -> None:
    """The table bounds, checked on the Markdown itself: the Markdown reader shortens tables that
    are too big (right for a user's file), but what the model writes gets an error instead."""
    run = 0
    for n, line in enumerate([*text.splitlines(), ""]):
        if line.lstrip().startswith("|"):
            run += 1
            cells = line.strip().strip("|").split("|")
            if len(cells) > MAX_TABLE_COLUMNS:
                raise ContentError(
                    f"the table at line {n + 1} has {len(cells)} columns, at most {MAX_TABLE_COLUMNS}: "
                    "drop or merge columns"
                )
            continue
        if run - 2 > MAX_TABLE_ROWS:  # the header and its |---| line are not rows
            raise ContentError(
                f"a table has {run - 2} rows, at most {MAX_TABLE_ROWS}: summarise or split it"
            )
        run = 0


def parse_document(
    args: dict[str, Any], *, default_title: str = "Document", language: str = "fr"
) -> Document:
    title = checked_text(args.get("title"), "title", MAX_TITLE_CHARS).strip() or default_title
    subtitle = checked_text(args.get("subtitle"), "subtitle", MAX_TITLE_CHARS).strip()
    raw_blocks = args.get("blocks")
    if not raw_blocks and isinstance(args.get("markdown"), str) and args["markdown"].strip():
        # Content written as Markdown instead of blocks: the same structure, read by a parser.
        if len(args["markdown"]) > MAX_TOTAL_CHARS:
            raise ContentError(
                f"markdown has {len(args['markdown'])} characters, at most {MAX_TOTAL_CHARS}: shorten it"
            )
        check_markdown_tables(args["markdown"])
        # Before the Markdown reader, which would take the backslashes of \{ or \\ as escapes.
        raw_blocks = markdown_blocks(latex_to_text(args["markdown"]), title)
    if raw_blocks is None:
        raw_blocks = []
    if not isinstance(raw_blocks, list):
        raise ContentError("blocks must be a list")
    if len(raw_blocks) > MAX_BLOCKS:
        raise ContentError(f"{len(raw_blocks)} blocks, at most {MAX_BLOCKS}: shorten the document")
    blocks = tuple(parse_block(b, i) for i, b in enumerate(raw_blocks))
    cells = sum(len(b.rows) * max(len(b.columns), len(b.rows[0]) if b.rows else 0) for b in blocks)
    if cells > MAX_TABLE_CELLS:
        raise ContentError(
            f"tables hold {cells} cells in all, at most {MAX_TABLE_CELLS}: summarise the tables"
        )
    doc = Document(title=title, subtitle=subtitle, blocks=blocks, language=language_of(language))
    chars = doc.text_chars()
    if chars > MAX_TOTAL_CHARS:
        raise ContentError(f"the document has {chars} characters, at most {MAX_TOTAL_CHARS}: shorten it")
    return doc


def _inline_md(token: Any) -> str:
    """Inline Markdown as our plain text with **bold** / *italic* kept."""
    out = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type in ("strong_open", "strong_close"):
            out.append("**")
        elif child.type in ("em_open", "em_close"):
            out.append("*")
        elif child.type in ("softbreak", "hardbreak"):
            out.append("\n" if child.type == "hardbreak" else " ")
    return "".join(out).strip()


def _docx(data: bytes, title: str) -> Document:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    from bot.documents.extract import _check_zip

    _check_zip(data)
    document = docx.Document(io.BytesIO(data))
    blocks: list[Block] = []
    pending: list[str] = []
    levels: list[int] = []  # "List Bullet 2" is an item one level down
    pending_ordered = False

    def flush() -> None:
        nonlocal pending, levels
        if pending:
            nested = tuple(levels) if any(levels) else ()
            blocks.append(Block("bullets", items=tuple(pending), ordered=pending_ordered, levels=nested))
            pending, levels = [], []

    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            style = (item.style.name if item.style is not None else "") or ""
            text = _docx_runs(item)
            if style.startswith("List"):
                ordered = "Number" in style
                if pending and ordered != pending_ordered:
                    flush()
                pending_ordered = ordered
                if text:
                    pending.append(text)
                    depth = int(style.split()[-1]) - 1 if style.split()[-1].isdigit() else 0
                    levels.append(min(depth, levels[-1] + 1 if levels else 0))
                continue
            flush()
            if not text.strip():
                continue
            if style == "Title" and not blocks:
                title = item.text
            elif style.startswith("Heading"):
                level = int(style.split()[-1]) if style.split()[-1].isdigit() else 1
                blocks.append(Block("heading", text=item.text, level=min(level, 3)))
            else:
                blocks.append(Block("paragraph", text=text, quote=style in ("Quote", "Intense Quote")))
        elif isinstance(item, Table):
            flush()
            rows = [[cell.text for cell in row.cells] for row in item.rows]
            blocks.append(_table_block(rows, []))
    flush()
    return Document(title, blocks=tuple(blocks))


def _docx_runs(paragraph: Any) -> str:
    out = []
    for run in paragraph.runs:
        text = run.text
        if not text:
            continue
        if run.bold and text.strip():
            text = f"**{text}**"
        elif run.italic and text.strip():
            text = f"*{text}*"
        out.append(text)
    return "".join(out)


def _pptx(data: bytes, title: str) -> Document:
    from pptx import Presentation

    from bot.documents.extract import _check_zip

    _check_zip(data)
    prs = Presentation(io.BytesIO(data))
    blocks: list[Block] = []
    for number, slide in enumerate(prs.slides, start=1):
        heading = (
            slide.shapes.title.text
            if slide.shapes.title is not None and slide.shapes.title.text
            else f"{number}"
        )
        blocks.append(Block("heading", text=heading, level=1))
        items: list[str] = []
        for shape in slide.shapes:
            if shape == slide.shapes.title:
                continue
            if shape.has_text_frame:
                items.extend(p.text for p in shape.text_frame.paragraphs if p.text.strip())
            if getattr(shape, "has_table", False) and shape.has_table:
                rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
                if items:
                    blocks.append(Block("bullets", items=tuple(items)))
                    items = []
                blocks.append(_table_block(rows, []))
        if items:
            blocks.append(Block("bullets", items=tuple(items)))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                blocks.append(Block("paragraph", text=f"*{notes}*"))
    return Document(title, blocks=tuple(blocks))
