"""Excel workbooks (openpyxl, write-only for speed): several sheets, a styled frozen header,
column widths that fit, numbers stored as numbers with formats, and formulas that Excel computes
when the file is opened."""

from __future__ import annotations

import io
import re
from copy import copy
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from bot.documents.content import ContentError, xml_safe

MAX_SHEETS = 20
MAX_ROWS = 10_000  # per sheet
MAX_COLUMNS = 50
MAX_CELLS = 300_000
MAX_CELL_CHARS = 32_767  # Excel's own limit

COLUMN_TYPES = ("auto", "text", "number", "integer", "fcfa", "xof", "eur", "percent", "date")
FORMATS = {
    "number": "#,##0.00",
    "integer": "#,##0",
    "fcfa": '#,##0 "FCFA"',
    "xof": '#,##0 "XOF"',
    "eur": '#,##0.00 "€"',
    "percent": "0.0%",
    "date": "DD/MM/YYYY",
}
NUMERIC_TYPES = ("number", "integer", "fcfa", "xof", "eur")

SHEET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "sheet name (max 31 characters)"},
        "columns": {
            "type": "array",
            "description": "header cells, in order: a header text, or {header, type} to format the column",
            "items": {
                "anyOf": [
                    {"type": "string"},
                    {
                        "type": "object",
                        "properties": {
                            "header": {"type": "string"},
                            "type": {
                                "type": "string",
                                "enum": list(COLUMN_TYPES),
                                "description": "fcfa/xof: whole amounts with thousands separators; percent: "
                                "a fraction (0.15) or text like '15 %'; date: YYYY-MM-DD or DD/MM/YYYY",
                            },
                        },
                        "required": ["header"],
                    },
                ],
            },
        },
        "rows": {
            "type": "array",
            "items": {"type": "array", "items": {"type": ["string", "number", "boolean", "null"]}},
            "description": "data rows; a cell text starting with '=' is a formula, e.g. '=SUM(B2:B9)'",
        },
        "totals": {"type": "boolean", "description": "add a Total row summing the numeric columns"},
    },
    "required": ["name", "rows"],
}


@dataclass(frozen=True)
class Column:
    header: str
    type: str


@dataclass(frozen=True)
class Sheet:
    name: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Any, ...], ...]
    totals: bool


_SHEET_BAD = re.compile(r"[\[\]:*?/\\\x00-\x1f]")
# Formulas that reach outside the workbook (DDE, web calls, external links) are refused.
_FORMULA_BAD = re.compile(
    r"\||\[|\b(WEBSERVICE|FILTERXML|CALL|REGISTER|EXEC|RTD|IMPORTXML|IMPORTDATA)\s*\(", re.I
)


def _sheet_name(raw: Any, index: int, used: set[str]) -> str:
    name = _SHEET_BAD.sub(" ", str(raw or "")).strip().strip("'")[:31].strip() or f"Feuille {index + 1}"
    base, n = name, 2
    while name.casefold() in used:
        suffix = f" ({n})"
        name = base[: 31 - len(suffix)] + suffix
        n += 1
    used.add(name.casefold())
    return name


def parse_workbook(args: dict[str, Any]) -> list[Sheet]:
    raw_sheets = args.get("sheets")
    if raw_sheets is None and "rows" in args:
        raw_sheets = [
            {
                "name": args.get("sheet_name") or "Feuille 1",
                **{k: args[k] for k in ("columns", "rows", "totals") if k in args},
            }
        ]
    if not isinstance(raw_sheets, list) or not raw_sheets:
        raise ContentError("sheets must be a non-empty list of {name, columns, rows}")
    if len(raw_sheets) > MAX_SHEETS:
        raise ContentError(f"{len(raw_sheets)} sheets, at most {MAX_SHEETS}: merge some sheets")
    used: set[str] = set()
    sheets: list[Sheet] = []
    cells = 0
    for i, raw in enumerate(raw_sheets):
        where = f"sheets[{i}]"
        if not isinstance(raw, dict):
            raise ContentError(f"{where} must be an object with name, columns and rows")
        rows = raw.get("rows") or []
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise ContentError(f"{where}.rows must be a list of lists (one list of cells per row)")
        if len(rows) > MAX_ROWS:
            raise ContentError(
                f"{where} has {len(rows)} rows, at most {MAX_ROWS} per sheet: summarise the data or "
                "split it across sheets or files"
            )
        raw_cols = raw.get("columns") or []
        if not isinstance(raw_cols, list):
            raise ContentError(f"{where}.columns must be a list")
        columns = []
        for n, col in enumerate(raw_cols):
            if isinstance(col, dict):
                kind = str(col.get("type") or "auto").lower()
                if kind not in COLUMN_TYPES:
                    raise ContentError(f"{where}.columns[{n}].type must be one of {', '.join(COLUMN_TYPES)}")
                columns.append(Column(xml_safe(str(col.get("header") or ""))[:255], kind))
            else:
                columns.append(Column("" if col is None else xml_safe(str(col))[:255], "auto"))
        width = max([len(columns), *(len(r) for r in rows)] or [0])
        if width > MAX_COLUMNS:
            raise ContentError(f"{where} has {width} columns, at most {MAX_COLUMNS}: drop or merge columns")
        cells += width * (len(rows) + 1)
        if cells > MAX_CELLS:
            raise ContentError(f"the workbook would hold over {MAX_CELLS} cells: summarise the data")
        columns += [Column("", "auto")] * (width - len(columns))
        sheets.append(
            Sheet(
                name=_sheet_name(raw.get("name"), i, used),
                columns=tuple(columns),
                rows=tuple(tuple(r) + (None,) * (width - len(r)) for r in rows),
                totals=bool(raw.get("totals", False)),
            )
        )
    return sheets


# --- values -------------------------------------------------------------------------------------

_NUMBER = re.compile(r"^[+-]?(\d{1,3}([ .,]\d{3})+|\d+)([.,]\d+)?$")
_UNITS = re.compile(r"\s*(FCFA|F\s?CFA|XOF|CFA|EUR|€|F)\s*$", re.I)


def parse_number(value: Any) -> float | int | None:
    """A number from a JSON number or a text as people write it: "1 250 000", "12,5", "1.250.000 FCFA"."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if not isinstance(value, str):
        return None
    text = _UNITS.sub("", value.replace("\u00a0", " ").replace("\u202f", " ").strip())
    if not _NUMBER.match(text):
        return None
    digits = text.lstrip("+-")
    if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
        return None  # "0707..." is a phone number or a code, not a quantity
    sign = -1 if text.startswith("-") else 1
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
    number = float(body) * sign
    return int(number) if number.is_integer() and "." not in body else number


def parse_percent(value: Any) -> float | None:
    if isinstance(value, str) and value.strip().endswith("%"):
        number = parse_number(value.strip()[:-1].strip())
        return None if number is None else number / 100
    number = parse_number(value)
    return None if number is None else float(number)


_DATE_FORMATS = ("%Y-%m-%d", "%d/%m/%Y", "%d-%m-%Y", "%d.%m.%Y", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M")


_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_FR_DATE = re.compile(r"^(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})$")


def parse_date(value: Any) -> date | None:
    if not isinstance(value, str):
        return None
    # The two common shapes without strptime, which is slow over thousands of rows.
    text = value.strip()
    m = _ISO_DATE.match(text)
    parts = (int(m[1]), int(m[2]), int(m[3])) if m else None
    if parts is None and (m := _FR_DATE.match(text)):
        parts = (int(m[3]), int(m[2]), int(m[1]))
    if parts is not None:
        try:
            return date(*parts)
        except ValueError:
            return None
    for fmt in _DATE_FORMATS:
        try:
            parsed = datetime.strptime(value.strip(), fmt)
        except ValueError:
            continue
        return parsed if parsed.hour or parsed.minute else parsed.date()
    return None


def _formula(value: Any, where: str) -> str | None:
    if isinstance(value, str) and value.startswith("=") and len(value) > 1:
        if _FORMULA_BAD.search(value):
            raise ContentError(f"{where}: formulas may not refer to other files, DDE or web services")
        return value
    return None


def _auto_type(sheet: Sheet, col: int) -> str:
    # A sample decides; a later cell that does not fit the type is kept as text (see _convert).
    values = [r[col] for r in sheet.rows[:500] if r[col] not in (None, "") and not _is_formula(r[col])]
    if not values:
        return "text"
    if all(parse_date(v) is not None for v in values):
        return "date"
    if all(isinstance(v, str) and v.strip().endswith("%") and parse_percent(v) is not None for v in values):
        return "percent"
    numbers = [parse_number(v) for v in values]
    if all(n is not None for n in numbers):
        header = sheet.columns[col].header.upper()
        if "FCFA" in header or "XOF" in header or "CFA" in header:
            return "fcfa"
        return "integer" if all(float(n).is_integer() for n in numbers) else "number"  # type: ignore[arg-type]
    return "text"


def _is_formula(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("=") and len(value) > 1


def _convert(value: Any, kind: str) -> Any:
    if value is None or value == "":
        return None
    kind_of_value = type(value)
    if kind_of_value is bool:
        return value
    if kind_of_value is int and (kind in NUMERIC_TYPES or kind == "percent"):
        return value
    if kind_of_value is float and kind in ("number", "eur", "percent"):
        return value
    if kind in NUMERIC_TYPES:
        number = parse_number(value)
        if number is not None:
            return (
                round(number)
                if kind in ("integer", "fcfa", "xof") and abs(number - round(number)) < 1e-9
                else number
            )
    elif kind == "percent":
        number = parse_percent(value)
        if number is not None:
            return number
    elif kind == "date":
        parsed = parse_date(value)
        if parsed is not None:
            return parsed
    elif kind == "auto":
        return value
    text = xml_safe(str(value))
    if len(text) > MAX_CELL_CHARS:
        raise ContentError(f"a cell holds {len(text)} characters, Excel allows {MAX_CELL_CHARS}: shorten it")
    return text


_UNIT_WIDTH = {"fcfa": 5, "xof": 4, "eur": 2, "percent": 2}


def _column_width(header: str, values: list[Any], kind: str) -> float:
    """Characters the widest cell needs, as Excel shows it (thousands separators, units)."""
    width = len(header)
    numbers = [v for v in values if type(v) is int or type(v) is float]
    if numbers:
        widest = max(max(numbers), -min(numbers))
        shown = widest * 100 if kind == "percent" else widest
        text = f"{shown:,.2f}" if kind in ("number", "eur") else f"{shown:,.0f}"
        width = max(width, len(text) + (1 if min(numbers) < 0 else 0) + _UNIT_WIDTH.get(kind, 0))
    if any(isinstance(v, date) for v in values):
        width = max(width, 10)
    texts = [v for v in values if type(v) is str]
    if texts:
        longest = max(max(len(line) for line in t.split("\n")) if "\n" in t else len(t) for t in texts)
        width = max(width, longest)
    return width


# --- workbook -----------------------------------------------------------------------------------


def build_xlsx(title: str, sheets: list[Sheet]) -> bytes:
    from openpyxl import Workbook
    from openpyxl.cell import Cell
    from openpyxl.styles import Alignment, Border, Font, PatternFill, Side
    from openpyxl.styles.cell_style import StyleArray
    from openpyxl.utils import get_column_letter
    from openpyxl.workbook.properties import CalcProperties

    wb = Workbook()
    wb.remove(wb.active)
    wb.properties.title = title
    wb.properties.creator = "Deblo"
    # Formulas are written without cached values: ask Excel/LibreOffice to compute them on open.
    wb.calculation = CalcProperties(fullCalcOnLoad=True)
    header_font = Font(bold=True, color="FFFFFF")
    header_fill = PatternFill("solid", fgColor="1F3A5F")
    header_align = Alignment(horizontal="center", vertical="center", wrap_text=True)
    thin = Side(style="thin", color="B0B7C3")
    header_border = Border(bottom=thin, top=thin, left=thin, right=thin)
    wrap = Alignment(wrap_text=True, vertical="top")

    for sheet in sheets:
        ws = wb.create_sheet(sheet.name)
        ncols = len(sheet.columns)
        kinds = [c.type if c.type != "auto" else _auto_type(sheet, i) for i, c in enumerate(sheet.columns)]
        rows: list[list[Any]] = []
        for r, raw in enumerate(sheet.rows):
            row = []
            for c, value in enumerate(raw):
                if type(value) is str and value.startswith("="):
                    row.append(xml_safe(_formula(value, f"sheet {sheet.name!r} row {r + 1}") or value))
                else:
                    row.append(_convert(value, kinds[c]))
            rows.append(row)
        for c in range(ncols):
            values = [row[c] for row in rows]
            formulas = any(type(v) is str and v.startswith("=") for v in values)
            plain = [v for v in values if not (type(v) is str and v.startswith("="))]
            width = max(_column_width(sheet.columns[c].header, plain, kinds[c]), 12 if formulas else 0)
            ws.column_dimensions[get_column_letter(c + 1)].width = min(max(width + 2, 8), 60)
        has_header = any(col.header for col in sheet.columns)
        first_data = 2 if has_header else 1
        if has_header:
            ws.freeze_panes = "A2"
            if rows:
                ws.auto_filter.ref = f"A1:{get_column_letter(ncols)}{len(rows) + 1}"
            for c, col in enumerate(sheet.columns, start=1):
                cell = ws.cell(row=1, column=c, value=col.header)
                cell.font, cell.fill, cell.alignment, cell.border = (
                    header_font,
                    header_fill,
                    header_align,
                    header_border,
                )
        formats = [FORMATS.get(k) for k in kinds]
        # One style per column, built once and copied: setting number_format cell by cell is slow.
        column_styles: list[StyleArray | None] = []
        for fmt in formats:
            if fmt is None:
                column_styles.append(None)
            else:
                template = Cell(ws)
                template.number_format = fmt
                column_styles.append(template._style)
        wrap_style: StyleArray | None = None
        for r, row in enumerate(rows, start=first_data):
            for c, value in enumerate(row):
                if value is None:
                    continue
                cell = ws.cell(row=r, column=c + 1, value=value)
                style = column_styles[c]
                if style is not None:
                    cell._style = copy(style)
                elif type(value) is str and "\n" in value:
                    if wrap_style is None:
                        cell.alignment = wrap
                        wrap_style = copy(cell._style)
                    else:
                        cell._style = copy(wrap_style)
        if sheet.totals and rows:
            last = first_data + len(rows) - 1
            total_at = last + 1
            for c in range(ncols):
                letter = get_column_letter(c + 1)
                cell = ws.cell(row=total_at, column=c + 1)
                if c == 0 and kinds[0] not in NUMERIC_TYPES:
                    cell.value = "Total"
                elif kinds[c] in NUMERIC_TYPES:
                    cell.value = f"=SUM({letter}{first_data}:{letter}{last})"
                    cell.number_format = formats[c] or "General"
                cell.font = Font(bold=True)
                cell.border = Border(top=thin)
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()
