"""The structured content every document generator takes: a title and a list of blocks.

The model writes it as Markdown (`markdown`, what the tools' schemas offer: one short field instead
of a schema per block kind); the older list of blocks (`blocks`) is still read. `parse_document`
(in convert.py, which reads Markdown) checks either and says, in an error the model can act on,
what to reduce or fix. Generators receive only checked content.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.channel.maths import latex_to_text
from bot.documents.errors import DocumentError

MAX_BLOCKS = 3000
MAX_TOTAL_CHARS = 400_000
MAX_TITLE_CHARS = 300
MAX_BLOCK_CHARS = 20_000
MAX_LIST_ITEMS = 500
MAX_TABLE_COLUMNS, MAX_TABLE_ROWS, MAX_TABLE_CELLS = 20, 5000, 60_000

BLOCK_TYPES = ("heading", "paragraph", "bullets", "table", "page_break")

# The older form of one block, still read by parse_block; the tools offer Markdown instead.
BLOCK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {"type": "string", "enum": list(BLOCK_TYPES)},
        "text": {"type": "string"},
        "level": {"type": "integer"},
        "items": {"type": "array", "items": {"type": "string"}},
        "ordered": {"type": "boolean"},
        "levels": {"type": "array", "items": {"type": "integer"}},
        "quote": {"type": "boolean"},
        "columns": {"type": "array", "items": {"type": "string"}},
        "rows": {"type": "array", "items": {"type": "array"}},
    },
    "required": ["type"],
}


class ContentError(DocumentError, ValueError):
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
    levels: tuple[int, ...] = ()  # bullets: each item's nesting level (0 = top); empty = all top
    quote: bool = False  # paragraph: a quotation (Markdown "> "), shown indented

    def item_levels(self) -> tuple[int, ...]:
        return self.levels or (0,) * len(self.items)


@dataclass(frozen=True)
class Document:
    title: str
    subtitle: str = ""
    blocks: tuple[Block, ...] = field(default_factory=tuple)
    language: str = "fr"  # the reader's language: spell-checking and hyphenation in viewers

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


def checked_text(value: Any, what: str, limit: int = MAX_BLOCK_CHARS) -> str:
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
        return Block("paragraph", text=checked_text(raw, where))
    if not isinstance(raw, dict):
        raise ContentError(f"{where} must be an object with a type ({', '.join(BLOCK_TYPES)})")
    kind = raw.get("type")
    if kind is None:  # a forgiving guess for blocks that only carry their content
        kind = "table" if "rows" in raw else "bullets" if "items" in raw else "paragraph"
    if kind in ("list", "bullet", "numbered"):
        kind = "bullets"
    quote = bool(raw.get("quote")) or kind in ("quote", "blockquote")
    if kind in ("quote", "blockquote"):
        kind = "paragraph"
    if kind not in BLOCK_TYPES:
        raise ContentError(f"{where}.type must be one of {', '.join(BLOCK_TYPES)}, got {kind!r}")
    if kind == "heading":
        level = raw.get("level", 1)
        level = min(max(int(level), 1), 3) if isinstance(level, int | float) else 1
        return Block("heading", text=checked_text(raw.get("text"), f"{where}.text", 500), level=level)
    if kind == "paragraph":
        return Block("paragraph", text=checked_text(raw.get("text"), f"{where}.text"), quote=quote)
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
            items=tuple(checked_text(i, f"{where}.items[{n}]", 5000) for n, i in enumerate(items)),
            ordered=bool(raw.get("ordered", False)),
            levels=_levels(raw.get("levels"), len(items), where),
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
    header = tuple(checked_text(c, f"{where}.columns", 500) for c in columns) + ("",) * (width - len(columns))
    body = tuple(
        tuple(checked_text(cell_text(c), f"{where}.rows", 5000) for c in r) + ("",) * (width - len(r))
        for r in rows
    )
    return Block("table", columns=header if columns else (), rows=body)


def _levels(raw: Any, count: int, where: str) -> tuple[int, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in raw):
        raise ContentError(f"{where}.levels must be a list of integers (0 = top level), one per item")
    levels = [min(max(n, 0), 3) for n in raw[:count]] + [0] * max(count - len(raw), 0)
    # An item is at most one level below the one before it, as in any outline.
    for i in range(len(levels)):
        levels[i] = min(levels[i], levels[i - 1] + 1 if i else 0)
    return tuple(levels) if any(levels) else ()


NO_CONTENT = "give the content as markdown"


def has_content(args: dict[str, Any]) -> bool:
    return bool(args.get("blocks")) or bool(str(args.get("markdown") or "").strip())


# Inline emphasis the model tends to write: **bold** and *italic* (kept simple on purpose).
_INLINE = re.compile(r"\*\*(.+?)\*\*|(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")


def inline_runs(text: str) -> list[tuple[str, bool, bool]]:
    """Splits text into (text, bold, italic) runs, its LaTeX made readable maths (3/4, x², √2)."""
    runs: list[tuple[str, bool, bool]] = []
    pos, text = 0, latex_to_text(text)
    for m in _INLINE.finditer(text):
        if m.start() > pos:
            runs.append((text[pos : m.start()], False, False))
        runs.append((m.group(1), True, False) if m.group(1) is not None else (m.group(2), False, True))
        pos = m.end()
    if pos < len(text):
        runs.append((text[pos:], False, False))
    return runs


def plain(text: str) -> str:
    return "".join(run for run, _b, _i in inline_runs(text))


# Optional fields every file tool reads, told once in the system prompt (schemas allow extra fields).
FILE_FIELDS: dict[str, Any] = {}


def document_schema(**extra: dict[str, Any]) -> dict[str, Any]:
    """JSON schema of a text document tool's arguments: the title and the content as Markdown.

    The Markdown rules (headings, lists, tables, page breaks) are told once in the system prompt,
    not in every tool: this schema is sent with every model call. `extra` adds tool-specific fields;
    `markdown` is required unless one of them replaces it.
    """
    return {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "markdown": {"type": "string"},
            **FILE_FIELDS,
            **extra,
        },
        "required": ["title"] if extra else ["title", "markdown"],
    }


# --- language -------------------------------------------------------------------------------------

# The tag each format records: French readers are in West Africa, France or Belgium (fr-FR is
# what office suites spell-check with); English readers get British spelling.
LANGUAGE_TAGS = {"fr": "fr-FR", "en": "en-GB"}


def language_of(language: str | None) -> str:
    """"fr" or "en" from a user's language ("fr", "en", "en-US", "FR"…); French by default."""
    code = (language or "").strip().lower()[:2]
    return code if code in LANGUAGE_TAGS else "fr"


def language_tag(language: str | None) -> str:
    """The BCP 47 tag written in a file: fr-FR or en-GB."""
    return LANGUAGE_TAGS[language_of(language)]


# --- numbers and column types ---------------------------------------------------------------------
#
# One reading of table cells for every format, so that a column is right-aligned in the PDF and the
# Word file exactly when the workbook stores it as numbers and sums it.

NUMERIC_KINDS = ("integer", "number", "fcfa", "xof", "eur", "percent")
COLUMN_KINDS = ("text", "date", *NUMERIC_KINDS)

_SPACE_CHARS = "\u00a0\u202f\u2009\u2007\u2008"
_SPACES_TO_PLAIN = str.maketrans({c: " " for c in _SPACE_CHARS})
_MINUS_SIGNS = "-\u2212\u2013"  # hyphen-minus, minus sign, en dash written as a minus
_NUMBER = re.compile(r"^(\d{1,3}([ .,]\d{3})+|\d+)([.,]\d+)?$")
_CURRENCY = r"FCFA|F\s?CFA|XOF|CFA|EUR|€|\$|USD|F"
_UNIT_BEFORE = re.compile(rf"^({_CURRENCY})\s*(?=[\d(+{_MINUS_SIGNS}])", re.I)
_UNIT_AFTER = re.compile(rf"(?<=[\d)])\s*({_CURRENCY})$", re.I)
_FCFA = re.compile(r"\b(F\s?CFA|XOF|CFA)\b", re.I)
_EURO = re.compile(r"€|\bEUR\b", re.I)
# Cells that say "nothing here" and do not count for or against a column's type.
_EMPTY_MARKS = frozenset(
    {"", "-", "—", "–", "−", "/", "n/a", "na", "n.a.", "nd", "n.d.", "néant", "…", "..."}
)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2})?)?$")
_FR_DATE = re.compile(r"^\d{1,2}[/.-]\d{1,2}[/.-]\d{4}$")
_PLAIN_DIGITS = re.compile(r"^\d+$")
# Headers of columns that hold identifiers, not quantities: their digits are never summed.
# (Years are told by their values: "Année" may as well head a year's total.)
_ID_HEADER = re.compile(
    r"\b(compte|comptes|code|codes|n°|no|num|numéro|numero|réf|ref|référence|reference|id|identifiant|"
    r"matricule|tél|tel|téléphone|telephone|phone|account|iban|rib|siret|ncc|"
    r"nif|cni|code postal|zip)\b",
    re.I,
)
_AMOUNT_HEADER = re.compile(
    r"montant|prix|total|solde|débit|debit|crédit|credit|fcfa|xof|cfa|€|eur|amount|price|balance|coût|cout|"
    r"cost|valeur|value|budget|brut|net|charges|produits|recettes|dépenses|depenses",
    re.I,
)
SUBTOTAL_LABEL = re.compile(r"^\W*(sous[- ]?total|sous[- ]?totaux|sub-?total|totaux|total)s?\b", re.I)


def _number_text(value: str) -> tuple[str, bool] | None:
    """The digits of an amount as written, and whether it is negative; None when it is not one."""
    text = (plain(value) if "*" in value else value).translate(_SPACES_TO_PLAIN).strip()
    negative = False
    for _ in range(2):  # "(92 700 000) FCFA", "FCFA (92 700 000)", "-1 000 €"
        text = _UNIT_AFTER.sub("", _UNIT_BEFORE.sub("", text)).strip()
        if len(text) > 2 and text[0] == "(" and text[-1] == ")":
            negative, text = not negative, text[1:-1].strip()
        elif text[:1] in _MINUS_SIGNS and len(text) > 1:
            negative, text = not negative, text[1:].lstrip()
        elif text[:1] == "+":
            text = text[1:].lstrip()
    return (text, negative) if _NUMBER.match(text) else None


_PLAIN_INTEGER = re.compile(r"-?[1-9]\d{0,2}(?:[ \u00a0\u202f]\d{3})+|-?\d+")
_NO_SPACES = str.maketrans({" ": None, "\u00a0": None, "\u202f": None})


def parse_number(value: Any) -> float | int | None:
    """A number from a JSON number or a text as people write it: "1 250 000", "12,5",
    "1.250.000 FCFA", "(92 700 000)" and "− 3 000" (negatives), "€ 12,50"."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if not isinstance(value, str):
        return None
    if _PLAIN_INTEGER.fullmatch(value):  # most amounts: "1 250 000", "-3 000", "4452"
        if len(value) > 1 and value.lstrip("-")[:1] == "0" and value.lstrip("-") != "0":
            return None  # "0707..." is a phone number or a code, not a quantity
        return int(value.translate(_NO_SPACES))
    found = _number_text(value)
    if found is None:
        return None
    digits, negative = found
    if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
        return None  # "0707..." is a phone number or a code, not a quantity
    body = digits.replace(" ", "")
    if "," in body and "." in body:
        decimal = "," if body.rfind(",") > body.rfind(".") else "."
        body = body.replace("." if decimal == "," else ",", "").replace(decimal, ".")
    elif body.count(",") == 1 and len(body.split(",")[1]) != 3:
        body = body.replace(",", ".")
    elif body.count(".") == 1 and len(body.split(".")[1]) != 3:
        pass
    else:
        body = body.replace(",", "").replace(".", "")
    number = -float(body) if negative else float(body)
    return int(number) if number.is_integer() and "." not in body else number


def parse_percent(value: Any) -> float | None:
    """A fraction from "12 %", "12,5%", "(3 %)"; a bare number is taken as already a fraction."""
    if isinstance(value, str):
        text = (plain(value) if "*" in value else value).translate(_SPACES_TO_PLAIN).strip()
        negative = len(text) > 2 and text[0] == "(" and text[-1] == ")"
        text = text[1:-1].strip() if negative else text
        if text.endswith("%"):
            number = parse_number(text[:-1].strip())
            if number is None:
                return None
            return -number / 100 if negative else number / 100
    number = parse_number(value)
    return None if number is None else float(number)


# A character no amount, percentage or date is written with: its cell is text.
_NOT_NUMBER_CHAR = re.compile(r"[^\d\s.,()+/:T%€$FCAXOEURSDfcaxoeursd\u2212\u2013-]")
_DIGIT = re.compile(r"\d")


def is_empty_mark(value: Any) -> bool:
    """Blank, or a dash / "n/a" that stands for no value."""
    if value is None:
        return True
    if not isinstance(value, str) or len(value) > 12:
        return False
    return (plain(value) if "*" in value else value).strip().lower() in _EMPTY_MARKS


def cell_kind(value: Any) -> str:
    """What one cell holds: empty, formula, percent, date, code (digits with a leading zero),
    number, text."""
    if is_empty_mark(value):
        return "empty"
    if isinstance(value, bool):
        return "text"
    if isinstance(value, int | float):
        return "number"
    if not isinstance(value, str):
        return "text"
    if value.startswith("=") and len(value) > 1:
        return "formula"
    if _PLAIN_INTEGER.fullmatch(value):
        return "number" if parse_number(value) is not None else "code"
    text = (plain(value) if "*" in value else value).strip()
    if _NOT_NUMBER_CHAR.search(text) or not _DIGIT.search(text):
        return "text"  # the common case of a label, decided without parsing
    if text.endswith("%"):
        return "percent" if parse_percent(text) is not None else "text"
    if _ISO_DATE.match(text) or _FR_DATE.match(text):
        return "date"
    if parse_number(text) is not None:
        return "number"
    if _PLAIN_DIGITS.match(text):
        return "code"
    return "text"


def _identifiers(header: str, numbers: list[Any], first_column: bool) -> bool:
    """Digits that name something (account 4452, year 2024, invoice 1043) rather than count it."""
    texts = [(plain(v) if "*" in v else v).strip() if isinstance(v, str) else v for v in numbers]
    plain_ints = all(
        (type(v) is int and v >= 0) or (isinstance(v, str) and _PLAIN_DIGITS.match(v)) for v in texts
    )
    if not plain_ints:
        return False
    if _ID_HEADER.search(header):
        return True
    if _AMOUNT_HEADER.search(header):
        return False
    years = all(1900 <= int(v) <= 2100 and len(str(v)) == 4 for v in texts)
    # A table's first column labels its rows: digits there are account or item numbers.
    return years or (first_column and all(len(str(v)) >= 3 for v in texts))


def column_type(header: str, values: list[Any], *, first_column: bool = False) -> str:
    """The type of one column from all its values: one of COLUMN_KINDS.

    A column is numeric when at least two thirds of its filled cells are amounts or percentages,
    so one bold total, a « — » or a note does not flip it; percentages only when they are most
    of its numbers; identifiers (codes, years, numbers in the first column) stay text.
    """
    counts = {"number": 0, "percent": 0, "date": 0, "text": 0, "code": 0}
    numbers: list[Any] = []
    seen: dict[str, str] = {}  # columns repeat values (dates, rates, codes): each is read once
    for value in values:
        if type(value) is str:
            kind = seen.get(value) or seen.setdefault(value, cell_kind(value))
        else:
            kind = cell_kind(value)
        if kind in ("empty", "formula"):
            continue
        counts[kind] += 1
        if kind == "number":
            numbers.append(value)
    filled = sum(counts.values())
    if not filled:  # formulas only: an amount header tells what they compute
        formulas = "formula" in seen.values()
        return _amount_kind(header, []) if formulas and _AMOUNT_HEADER.search(header) else "text"
    if counts["date"] * 3 >= filled * 2:
        return "date"
    numeric = counts["number"] + counts["percent"]
    if numeric * 3 < filled * 2:
        return "text"
    if counts["percent"] > counts["number"]:
        return "percent"
    if _identifiers(header, numbers, first_column):
        return "text"
    return _amount_kind(header, numbers)


def _amount_kind(header: str, numbers: list[Any]) -> str:
    written = " ".join(v for v in numbers if isinstance(v, str))
    if _FCFA.search(header) or _FCFA.search(written):
        return "fcfa"
    if _EURO.search(header) or _EURO.search(written):
        return "eur"
    return "integer" if all(_is_whole(v) for v in numbers) else "number"


def _is_whole(value: Any) -> bool:
    if type(value) is int or (type(value) is str and _PLAIN_INTEGER.fullmatch(value)):
        return True
    number = parse_number(value)
    return number is None or float(number).is_integer()


def column_types(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """The type of each column of a table (see column_type): what the PDF, Word and Excel
    generators all use to align, glue and store cells."""
    width = max([len(columns), *(len(r) for r in rows)] or [0])
    headers = [columns[i] if i < len(columns) else "" for i in range(width)]
    return [
        column_type(headers[i], [r[i] if i < len(r) else None for r in rows], first_column=i == 0)
        for i in range(width)
    ]


def is_subtotal_row(row: Sequence[Any], kinds: Sequence[str]) -> bool:
    """A row that already sums others ("Sous-total", "Total charges"): a grand total skips it."""
    for value, kind in zip(row, kinds, strict=False):
        if kind not in NUMERIC_KINDS and isinstance(value, str) and value.strip():
            return bool(SUBTOTAL_LABEL.match(plain(value)))
    return False


# --- widths ---------------------------------------------------------------------------------------

def fit_widths(shortest: Sequence[float], natural: Sequence[float], width: float) -> list[float]:
    """Column widths that sum to `width`: each at least its shortest (its longest unbreakable
    piece) when they fit, the room left shared in proportion to what each needs to hold its
    longest cell on one line."""
    if sum(natural) <= width:
        return [w * width / sum(natural) for w in natural]
    if sum(shortest) >= width:
        return [w * width / sum(shortest) for w in shortest]
    room = width - sum(shortest)
    wants = [max(nat - low, 0.0) for nat, low in zip(natural, shortest, strict=True)]
    total = sum(wants) or 1.0
    return [low + room * want / total for low, want in zip(shortest, wants, strict=True)]
