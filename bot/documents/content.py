"""The structured content every document generator takes: a title and a list of blocks.

The model writes it through each tool's JSON schema; `parse_document` checks it and says, in an
error the model can act on, what to reduce or fix. Generators receive only checked content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

MAX_BLOCKS = 3000
MAX_TOTAL_CHARS = 400_000
MAX_TITLE_CHARS = 300
MAX_BLOCK_CHARS = 20_000
MAX_LIST_ITEMS = 500
MAX_TABLE_COLUMNS = 20
MAX_TABLE_ROWS = 5000
MAX_TABLE_CELLS = 60_000

BLOCK_TYPES = ("heading", "paragraph", "bullets", "table", "page_break")

# JSON schema of one block, shared by the document tools.
BLOCK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {"type": "string", "enum": list(BLOCK_TYPES)},
        "text": {"type": "string", "description": "heading or paragraph text; **bold** and *italic* allowed"},
        "level": {"type": "integer", "minimum": 1, "maximum": 3, "description": "heading level"},
        "items": {"type": "array", "items": {"type": "string"}, "description": "list items (bullets)"},
        "ordered": {"type": "boolean", "description": "numbered list instead of bullets"},
        "columns": {"type": "array", "items": {"type": "string"}, "description": "table header"},
        "rows": {
            "type": "array",
            "items": {"type": "array", "items": {"type": ["string", "number", "null"]}},
            "description": "table rows, each a list of cells",
        },
    },
    "required": ["type"],
}


class ContentError(ValueError):
    """The content cannot be made into a document; the message says what to change."""


@dataclass(frozen=True)
class Block:
    type: str
    text: str = ""
    level: int = 1
    items: tuple[str, ...] = ()
    ordered: bool = False
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class Document:
    title: str
    subtitle: str = ""
    blocks: tuple[Block, ...] = field(default_factory=tuple)

    def text_chars(self) -> int:
        total = len(self.title) + len(self.subtitle)
        for b in self.blocks:
            total += len(b.text) + sum(map(len, b.items)) + sum(map(len, b.columns))
            total += sum(len(c) for row in b.rows for c in row)
        return total


# Control characters XML 1.0 cannot hold: Office files with them do not open, so they go.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_safe(text: str) -> str:
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "oui" if value else "non"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return xml_safe(str(value))


def _str(value: Any, what: str, limit: int = MAX_BLOCK_CHARS) -> str:
    if value is None:
        return ""
    if not isinstance(value, str | int | float):
        raise ContentError(f"{what} must be text")
    text = xml_safe(str(value))
    if len(text) > limit:
        raise ContentError(
            f"{what} is too long ({len(text)} characters, at most {limit}): shorten it or split it"
        )
    return text


def parse_block(raw: Any, index: int) -> Block:
    where = f"blocks[{index}]"
    if isinstance(raw, str):
        return Block("paragraph", text=_str(raw, where))
    if not isinstance(raw, dict):
        raise ContentError(f"{where} must be an object with a type ({', '.join(BLOCK_TYPES)})")
    kind = raw.get("type")
    if kind is None:  # a forgiving guess for blocks that only carry their content
        kind = "table" if "rows" in raw else "bullets" if "items" in raw else "paragraph"
    if kind in ("list", "bullet", "numbered"):
        kind = "bullets"
    if kind not in BLOCK_TYPES:
        raise ContentError(f"{where}.type must be one of {', '.join(BLOCK_TYPES)}, got {kind!r}")
    if kind == "heading":
        level = raw.get("level", 1)
        level = min(max(int(level), 1), 3) if isinstance(level, int | float) else 1
        return Block("heading", text=_str(raw.get("text"), f"{where}.text", 500), level=level)
    if kind == "paragraph":
        return Block("paragraph", text=_str(raw.get("text"), f"{where}.text"))
    if kind == "page_break":
        return Block("page_break")
    if kind == "bullets":
        items = raw.get("items") or []
        if not isinstance(items, list):
            raise ContentError(f"{where}.items must be a list of strings")
        if len(items) > MAX_LIST_ITEMS:
            raise ContentError(f"{where} has {len(items)} items, at most {MAX_LIST_ITEMS}: split the list")
        return Block(
            "bullets",
            items=tuple(_str(i, f"{where}.items[{n}]", 5000) for n, i in enumerate(items)),
            ordered=bool(raw.get("ordered", False)),
        )
    columns = raw.get("columns") or []
    rows = raw.get("rows") or []
    if not isinstance(columns, list) or not isinstance(rows, list):
        raise ContentError(f"{where}: columns must be a list of strings and rows a list of lists")
    if rows and not all(isinstance(r, list) for r in rows):
        raise ContentError(f"{where}.rows must be a list of lists (one list of cells per row)")
    width = max([len(columns), *(len(r) for r in rows)] or [0])
    if width == 0:
        raise ContentError(f"{where}: a table needs columns or rows")
    if width > MAX_TABLE_COLUMNS:
        raise ContentError(f"{where} has {width} columns, at most {MAX_TABLE_COLUMNS}: drop or merge columns")
    if len(rows) > MAX_TABLE_ROWS:
        raise ContentError(f"{where} has {len(rows)} rows, at most {MAX_TABLE_ROWS}: summarise or split it")
    header = tuple(_str(c, f"{where}.columns", 500) for c in columns) + ("",) * (width - len(columns))
    body = tuple(
        tuple(_str(cell_text(c), f"{where}.rows", 5000) for c in r) + ("",) * (width - len(r)) for r in rows
    )
    return Block("table", columns=header if columns else (), rows=body)


NO_CONTENT = "give the content as blocks or markdown"


def has_content(args: dict[str, Any]) -> bool:
    return bool(args.get("blocks")) or bool(str(args.get("markdown") or "").strip())


def parse_document(args: dict[str, Any], *, default_title: str = "Document") -> Document:
    title = _str(args.get("title"), "title", MAX_TITLE_CHARS).strip() or default_title
    subtitle = _str(args.get("subtitle"), "subtitle", MAX_TITLE_CHARS).strip()
    raw_blocks = args.get("blocks")
    if not raw_blocks and isinstance(args.get("markdown"), str) and args["markdown"].strip():
        # Content written as Markdown instead of blocks: the same structure, read by a parser.
        from bot.documents.convert import markdown_blocks

        if len(args["markdown"]) > MAX_TOTAL_CHARS:
            raise ContentError(
                f"markdown has {len(args['markdown'])} characters, at most {MAX_TOTAL_CHARS}: shorten it"
            )
        raw_blocks = markdown_blocks(args["markdown"], title)
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
    doc = Document(title=title, subtitle=subtitle, blocks=blocks)
    chars = doc.text_chars()
    if chars > MAX_TOTAL_CHARS:
        raise ContentError(f"the document has {chars} characters, at most {MAX_TOTAL_CHARS}: shorten it")
    return doc


# Inline emphasis the model tends to write: **bold** and *italic* (kept simple on purpose).
_INLINE = re.compile(r"\*\*(.+?)\*\*|(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")


def inline_runs(text: str) -> list[tuple[str, bool, bool]]:
    """Splits text into (text, bold, italic) runs."""
    runs: list[tuple[str, bool, bool]] = []
    pos = 0
    for m in _INLINE.finditer(text):
        if m.start() > pos:
            runs.append((text[pos : m.start()], False, False))
        if m.group(1) is not None:
            runs.append((m.group(1), True, False))
        else:
            runs.append((m.group(2), False, True))
        pos = m.end()
    if pos < len(text):
        runs.append((text[pos:], False, False))
    return runs


def plain(text: str) -> str:
    return "".join(run for run, _b, _i in inline_runs(text))


def document_schema(description_blocks: str = "the document's content, in order") -> dict[str, Any]:
    """JSON schema of a document tool's arguments: title, optional subtitle, blocks, file name."""
    return {
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "document title"},
            "subtitle": {"type": "string", "description": "optional subtitle (date, author, class…)"},
            "blocks": {"type": "array", "items": BLOCK_SCHEMA, "description": description_blocks},
            "filename": {"type": "string", "description": "file name without extension (default: the title)"},
            "markdown": {
                "type": "string",
                "description": "instead of blocks: the content as Markdown (# headings, lists, tables)",
            },
            "caption": {"type": "string", "description": "short message sent with the file"},
        },
        "required": ["title"],
    }
