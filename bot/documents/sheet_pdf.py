"""A workbook as structured content for the PDF generator: each cell as the workbook shows it (its
own number format, the formulas' values computed by calc.py), and every column kept. A sheet too
wide for one landscape page goes on in continuation tables, each on a new page with the first
column repeated, so that no column is ever dropped."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any

from bot.documents.calc import Computed, with_values
from bot.documents.content import MAX_TABLE_COLUMNS, MAX_TABLE_ROWS, Block, Document, cell_kind, plain
from bot.texts import fr_en

# Continuation tables are cut so that every column of one fits a landscape page whole at this
# font size (pdf.table_layout then picks the largest size that fits, down to 6 pt).
GROUP_FONT_SIZE = 8.0
NBSP = "\u00a0"

_QUOTED = re.compile(r'"([^"]*)"')
_CURRENCY = re.compile(r"\[\$([^\]-]*)(-[0-9A-Fa-f]+)?\]")
_BRACKETS = re.compile(r"\[[^\]]*\]")
_DATE_CODES = re.compile(r"[dmyhs]", re.I)
_DIGIT_CODES = re.compile(r"[0#?][0#?,.\s]*")


@dataclass(frozen=True)
class Converted:
    document: Document
    uncomputed: tuple[str, ...] = ()


def _number(value: float, decimals: int, grouped: bool, language: str) -> str:
    text = f"{value:,.{decimals}f}" if grouped else f"{value:.{decimals}f}"
    if language == "en":
        return text
    return text.replace(",", "\x00").replace(".", ",").replace("\x00", NBSP)


def _general(value: float | int, language: str) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    text = f"{value:.10g}"
    return fr_en(language, text.replace(".", ","), text)


def _section(number_format: str, value: float) -> tuple[str, float, str]:
    """The format section that applies to `value`, the value it shows, and a sign to put before."""
    sections = _QUOTED.sub(lambda m: '"' + m[1].replace(";", "\x01") + '"', number_format).split(";")
    sections = [s.replace("\x01", ";") for s in sections]
    if value < 0 and len(sections) > 1:
        return sections[1], -value, ""
    if value == 0 and len(sections) > 2:
        return sections[2], value, ""
    return sections[0], abs(value), "-" if value < 0 else ""


def shown_number(value: float | int, number_format: str, language: str = "fr") -> str:
    """A number as the workbook's format shows it: decimals, grouping, percent, currency and
    literal text; French separators (narrow no-break groups, decimal comma) for French readers."""
    fmt = (number_format or "General").strip()
    if fmt.lower() == "general" or fmt == "@":
        return _general(value, language)
    section, shown, sign = _section(fmt, value)
    section = _CURRENCY.sub(lambda m: '"' + m[1] + '"', section)
    section = _BRACKETS.sub("", section)
    literals: list[str] = []

    def keep(m: re.Match[str]) -> str:  # literal text, kept out of the number's codes
        literals.append(m[1])
        return chr(0xE000 + len(literals) - 1)  # a private-use character, no format code

    section = re.sub(r"\\(.)", keep, _QUOTED.sub(keep, section))
    section = re.sub(r"_.|\*.", " ", section)
    if "%" in section:
        shown *= 100
    match = _DIGIT_CODES.search(section)
    if match is None:
        if _DATE_CODES.search(section):
            return _general(value, language)
        body = section
    else:
        digits = match[0].rstrip()
        decimals = len(re.sub(r"[^0#?]", "", digits.split(".", 1)[1])) if "." in digits else 0
        number = _number(shown, decimals, "," in digits.split(".")[0], language)
        body = section[: match.start()] + number + section[match.start() + len(digits) :]
    out = re.sub("[\ue000-\uefff]", lambda m: literals[ord(m[0]) - 0xE000], body)
    if language != "en":
        out = out.replace(" %", "%").replace("%", NBSP + "%") if "%" in out else out
    return (sign + out.strip()) if sign else out.strip()


def shown(value: Any, number_format: str, language: str = "fr") -> str:
    """A cell's value as text, as the workbook shows it."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%d/%m/%Y %H:%M" if value.hour or value.minute else "%d/%m/%Y")
    if isinstance(value, date):
        return value.strftime("%d/%m/%Y")
    if isinstance(value, time):
        return value.strftime("%H:%M")
    if isinstance(value, bool):
        return fr_en(language, "oui", "yes") if value else fr_en(language, "non", "no")
    if isinstance(value, int | float):
        return shown_number(value, number_format, language)
    return str(value)


def workbook_document(data: bytes, title: str, language: str = "fr") -> Converted:
    """The workbook as content: a heading per sheet (when there are several), its table cut into
    column groups that fit, and what was left out or could not be computed said."""
    import openpyxl

    from bot.documents.extract import _check_zip

    _check_zip(data)
    computed: Computed = with_values(data)
    wb = openpyxl.load_workbook(io.BytesIO(computed.data), read_only=True, data_only=True)
    blocks: list[Block] = []
    try:
        for ws in wb.worksheets:
            rows: list[list[str]] = []
            for row in ws.iter_rows():
                rows.append([shown(c.value, getattr(c, "number_format", "") or "", language) for c in row])
                if len(rows) > MAX_TABLE_ROWS + 1:
                    break
            blocks += _sheet_blocks(ws.title, rows, len(wb.worksheets) > 1, language)
    finally:
        wb.close()
    return Converted(Document(title, blocks=tuple(blocks)), tuple(computed.notes()))


def _sheet_blocks(name: str, rows: list[list[str]], headed: bool, language: str) -> list[Block]:
    rows = [r for r in rows if any(c.strip() for c in r)]
    blocks = [Block("heading", text=name, level=1)] if headed else []
    if not rows:
        return blocks
    width = max(len(r) for r in rows)
    while width > 1 and not any(len(r) >= width and r[width - 1].strip() for r in rows):
        width -= 1
    rows = [(r + [""] * width)[:width] for r in rows]
    cut = len(rows) > MAX_TABLE_ROWS + 1
    rows = rows[: MAX_TABLE_ROWS + 1]
    groups = column_groups(rows)
    for n, group in enumerate(groups):
        if n:
            label = fr_en(language, "suite", "continued")
            span = f"{_letter(group[1])}–{_letter(group[-1])}" if len(group) > 2 else _letter(group[-1])
            blocks += [Block("page_break"), Block("heading", text=f"{name} ({label}, {span})", level=2)]
        table = [[r[c] for c in group] for r in rows]
        blocks.append(Block("table", columns=tuple(table[0]), rows=tuple(tuple(r) for r in table[1:])))
    if cut:
        note = fr_en(language, f"(tableau limité à {MAX_TABLE_ROWS} lignes)",
                     f"(table limited to {MAX_TABLE_ROWS} rows)")
        blocks.append(Block("paragraph", text=note))
    return blocks


def _letter(index: int) -> str:
    from openpyxl.utils import get_column_letter

    letter: str = get_column_letter(index + 1)
    return letter


def column_groups(rows: list[list[str]]) -> list[list[int]]:
    """Column indexes of each table: the first column, then as many following columns as fit a
    landscape page whole at GROUP_FONT_SIZE (at most MAX_TABLE_COLUMNS); each continuation group
    starts again with the first column."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    from bot.documents.pdf import CELL_PADDING, FIT_SLACK, FONT, frame_widths, register_fonts

    register_fonts()
    width = max(len(r) for r in rows)
    needs = []
    for c in range(width):
        widest = 0.0
        for i, row in enumerate(rows):
            whole = i and cell_kind(plain(row[c])) not in ("text", "empty")  # an amount: never broken
            for piece in [row[c]] if whole else row[c].replace("\u202f", NBSP).split(" "):
                font = FONT + "-Bold" if i == 0 or "**" in piece else FONT
                widest = max(widest, stringWidth(piece.replace("**", ""), font, GROUP_FONT_SIZE))
        needs.append(widest + CELL_PADDING + FIT_SLACK)
    room = frame_widths()[1]
    groups: list[list[int]] = []
    current = [0]
    used = needs[0]
    for c in range(1, width):
        if len(current) >= MAX_TABLE_COLUMNS or (used + needs[c] > room and len(current) > 1):
            groups.append(current)
            current, used = [0], needs[0]
        current.append(c)
        used += needs[c]
    groups.append(current)
    return groups
