"""Excel workbooks (openpyxl, data rows written in bulk for speed): several sheets, a styled frozen header,
column widths that fit, numbers stored as numbers with formats, and formulas (their values are
computed and cached by bot.documents.calc)."""

from __future__ import annotations

import io
import re
from copy import copy
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from bot.documents.content import (
    ContentError,
    column_type,
    is_subtotal_row,
    language_tag,
    parse_number,
    parse_percent,
    xml_safe,
)

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
NUMERIC_TYPES = ("number", "integer", "fcfa", "xof", "eur")  # summed in a Total row

CELL: dict[str, Any] = {"type": ["string", "number"]}  # a text, a number or '=' formula (null read too)
# One sheet as the model writes it: rows of cells, the first row the header. Column types are read
# from the header and the values (see bot.documents.content.column_type).
SHEET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "rows": {"type": "array", "items": {"type": "array", "items": CELL}},
        "totals": {"type": "boolean"},
    },
    "required": ["rows"],  # a sheet without a name is "Feuille n"
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


def _header_first(raw: Any) -> Any:
    """A sheet without `columns` has its header as first row; with `columns` (the older form,
    where a column may be {header, type}) its rows are all data."""
    if not isinstance(raw, dict) or "columns" in raw or not isinstance(raw.get("rows"), list):
        return raw
    rows = raw["rows"]
    if not rows:
        return {**raw, "columns": []}
    if not isinstance(rows[0], list):
        raise ContentError("rows must be a list of lists: the header row first, then one list per row")
    return {**raw, "columns": rows[0], "rows": rows[1:]}


def parse_workbook(args: dict[str, Any]) -> list[Sheet]:
    raw_sheets = args.get("sheets")
    if raw_sheets is None and "rows" in args:
        raw_sheets = [
            {
                "name": args.get("sheet_name") or "Feuille 1",
                **{k: args[k] for k in ("columns", "rows", "totals") if k in args},
            }
        ]
    if isinstance(raw_sheets, list):
        raw_sheets = [_header_first(raw) for raw in raw_sheets]
    if not isinstance(raw_sheets, list) or not raw_sheets:
        raise ContentError("sheets must be a non-empty list of {name, rows}, the header as first row")
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

# Numbers as written are read by the shared content model: one typing for workbook, PDF and Word.
__all__ = ["parse_number", "parse_percent"]


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
    """The column's type from all its values (bot.documents.content.column_type)."""
    kind = column_type(sheet.columns[col].header, [r[col] for r in sheet.rows], first_column=col == 0)
    return kind if kind in COLUMN_TYPES else "text"


def _is_formula(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("=") and len(value) > 1


def _convert(value: Any, kind: str) -> Any:
    """The value a cell stores: a number in a numeric column (a percentage there becomes a
    fraction, see _cell_format), a date in a date column, else the text as written."""
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
        if kind_of_value is str and value.rstrip().endswith("%"):
            fraction = parse_percent(value)
            if fraction is not None:
                return Percent(fraction)
        number = parse_number(value)
        if number is not None:
            return (
                round(number)
                if kind in ("integer", "fcfa", "xof") and abs(number - round(number)) < 1e-9
                else number
            )
    elif kind == "percent":
        fraction = parse_percent(value)
        if fraction is not None:
            return fraction
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


class Percent(float):
    """A percentage met in a column of amounts: stored as a fraction, shown as a percentage."""


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

FONT_NAME = "Calibri"  # the workbook's body font: header and total rows name it too
FONT_SIZE = 11
# Column width units (characters of the body font): about 90 fit across a portrait A4 page with
# Excel's default margins. Sheets are always fit to the page width; one wider than this, which
# would print at less than three quarters of its size in portrait, is printed in landscape.
PORTRAIT_WIDTH_UNITS = 120


def _rows(sheet: Sheet, kinds: list[str]) -> list[list[Any]]:
    rows: list[list[Any]] = []
    # Each distinct text of a column is converted once: dates, rates and codes repeat.
    seen: list[dict[str, Any]] = [{} for _ in kinds]
    for r, raw in enumerate(sheet.rows):
        row = []
        for c, value in enumerate(raw):
            if type(value) is not str:
                row.append(_convert(value, kinds[c]))
            elif value.startswith("="):
                row.append(xml_safe(_formula(value, f"sheet {sheet.name!r} row {r + 1}") or value))
            elif value in seen[c]:
                row.append(seen[c][value])
            else:
                row.append(seen[c].setdefault(value, _convert(value, kinds[c])))
        rows.append(row)
    return rows


def _widths(sheet: Sheet, rows: list[list[Any]], kinds: list[str]) -> list[float]:
    widths = []
    for c in range(len(sheet.columns)):
        plain_values = [row[c] for row in rows if not (type(row[c]) is str and row[c].startswith("="))]
        formulas = len(plain_values) < len(rows)
        room = (20 if kinds[c] in NUMERIC_TYPES else 12) if formulas else 0  # "999 999 999 FCFA" fits
        width = max(_column_width(sheet.columns[c].header, plain_values, kinds[c]), room)
        widths.append(min(max(width + 2, 8), 60))
    return widths


def _sum_ranges(letter: str, first: int, skipped: list[int], last: int) -> str:
    """SUM over first..last leaving out the rows that are subtotals themselves."""
    ranges, start = [], first
    for row in [*skipped, last + 1]:
        if row > start:
            ranges.append(f"{letter}{start}:{letter}{row - 1}" if row - 1 > start else f"{letter}{start}")
        start = row + 1
    if not ranges:
        return "0"
    # Excel takes at most 255 arguments per function.
    return "+".join(f"SUM({','.join(ranges[i:i + 200])})" for i in range(0, len(ranges), 200))


def _page_setup(ws: Any, widths: list[float], has_header: bool) -> None:
    """A4, every column on the page width (as many pages down as needed), the header row
    repeated on each printed page, landscape when the columns are too wide for portrait."""
    from openpyxl.worksheet.properties import PageSetupProperties

    ws.page_setup.paperSize = 9  # A4 in the spreadsheet paper-size table
    ws.page_setup.orientation = "landscape" if sum(widths) > PORTRAIT_WIDTH_UNITS else "portrait"
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0
    ws.sheet_properties.pageSetUpPr = PageSetupProperties(fitToPage=True)
    if has_header:
        ws.print_title_rows = "1:1"


def _styles(wb: Any) -> dict[str, Any]:
    """Style arrays built once and shared by cells: setting fonts and formats cell by cell is
    slow over ten thousand rows."""
    from openpyxl.cell import Cell
    from openpyxl.styles import Alignment, Border, Font, PatternFill, Side

    thin = Side(style="thin", color="B0B7C3")
    ws = wb.active  # a scratch sheet to make cells on; removed before the real ones are added
    out: dict[str, Any] = {}

    def make(name: str, number_format: str | None = None, **attrs: Any) -> None:
        cell = Cell(ws)
        for key, value in attrs.items():
            setattr(cell, key, value)
        if number_format:
            cell.number_format = number_format
        out[name] = cell._style

    make(
        "header",
        font=Font(name=FONT_NAME, size=FONT_SIZE, bold=True, color="FFFFFF"),
        fill=PatternFill("solid", fgColor="1F3A5F"),
        alignment=Alignment(horizontal="center", vertical="center", wrap_text=True),
        border=Border(bottom=thin, top=thin, left=thin, right=thin),
    )
    make("wrap", alignment=Alignment(wrap_text=True, vertical="top"))
    total_font = Font(name=FONT_NAME, size=FONT_SIZE, bold=True)
    make("total", font=total_font, border=Border(top=thin))
    # Right-aligned as numbers are, so that a « — » or a note in a column of amounts sits under
    # them rather than against the next column.
    right = Alignment(horizontal="right")
    for kind, fmt in FORMATS.items():
        align = {"alignment": right} if kind != "date" else {}
        make(kind, fmt, **align)
        make("total:" + kind, fmt, font=total_font, border=Border(top=thin), **align)
    wb.remove(ws)
    return out


_EPOCH = date(1899, 12, 30)  # day 0 of spreadsheet dates (1900 system, after the 1900 leap bug)
_XML_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def _cell_xml(ref: str, value: Any, style_id: int) -> str:
    """One <c> element, as openpyxl writes it (inline strings), for the rows written in bulk."""
    s = f' s="{style_id}"' if style_id else ""
    kind = type(value)
    if kind is str:
        if value.startswith("="):
            return f'<c r="{ref}"{s}><f>{value[1:].translate(_XML_ESCAPES)}</f><v></v></c>'
        space = ' xml:space="preserve"' if value != value.strip() else ""
        return f'<c r="{ref}"{s} t="inlineStr"><is><t{space}>{value.translate(_XML_ESCAPES)}</t></is></c>'
    if kind is bool:
        return f'<c r="{ref}"{s} t="b"><v>{int(value)}</v></c>'
    if kind is datetime:
        serial = (value - datetime(1899, 12, 30)).total_seconds() / 86400
        return f'<c r="{ref}"{s}><v>{serial!r}</v></c>'
    if kind is date:
        return f'<c r="{ref}"{s}><v>{(value - _EPOCH).days}</v></c>'
    if kind is int:
        return f'<c r="{ref}"{s}><v>{value}</v></c>'
    return f'<c r="{ref}"{s}><v>{float(value)!r}</v></c>'


def _rows_xml(rows: list[list[Any]], first_row: int, column_ids: list[int], ids: dict[str, int]) -> str:
    """The data rows as sheet XML. openpyxl takes some 15 µs per cell to write one; ten
    thousand rows of six columns would take about a second, so they are written here."""
    from openpyxl.utils import get_column_letter

    letters = [get_column_letter(c + 1) for c in range(len(column_ids))]
    date_id, percent_id, wrap_id = ids["date"], ids["percent"], ids["wrap"]
    out: list[str] = []
    for r, row in enumerate(rows, start=first_row):
        cells = []
        for c, value in enumerate(row):
            if value is None:
                continue
            style_id = column_ids[c]
            kind = type(value)
            if kind is Percent:
                style_id = percent_id
            elif not style_id and (kind is date or kind is datetime):
                style_id = date_id
            elif not style_id and kind is str and "\n" in value:
                style_id = wrap_id
            cells.append(_cell_xml(f"{letters[c]}{r}", value, style_id))
        out.append(f'<row r="{r}">{"".join(cells)}</row>')
    return "".join(out)


def _write_sheet(wb: Any, sheet: Sheet, styles: dict[str, Any]) -> tuple[Any, str, bool, str]:
    """The sheet with its header, total row and settings; its data rows as XML to put in it,
    whether it has a header row, and the range it fills."""
    from openpyxl.utils import get_column_letter

    ws = wb.create_sheet(sheet.name)
    ncols = len(sheet.columns)
    kinds = [c.type if c.type != "auto" else _auto_type(sheet, i) for i, c in enumerate(sheet.columns)]
    rows = _rows(sheet, kinds)
    widths = _widths(sheet, rows, kinds)
    for c, width in enumerate(widths):
        ws.column_dimensions[get_column_letter(c + 1)].width = width
    has_header = any(col.header for col in sheet.columns)
    first_data = 2 if has_header else 1
    _page_setup(ws, widths, has_header)
    if has_header:
        ws.freeze_panes = "A2"
        if rows:
            ws.auto_filter.ref = f"A1:{get_column_letter(ncols)}{len(rows) + 1}"
        for c, col in enumerate(sheet.columns, start=1):
            ws.cell(row=1, column=c, value=col.header)._style = copy(styles["header"])
    if sheet.totals and rows:
        for c, (value, style) in enumerate(_total_row(sheet, kinds, first_data), start=1):
            cell = ws.cell(row=first_data + len(rows), column=c, value=value)
            cell._style = copy(styles[style])
    ids = {name: wb._cell_styles.add(style) for name, style in styles.items()}
    column_ids = [ids[k] if k in FORMATS else 0 for k in kinds]
    last_row = max(first_data - 1 + len(rows) + (1 if sheet.totals and rows else 0), 1)
    dimension = f"A1:{get_column_letter(max(ncols, 1))}{last_row}"
    return ws, _rows_xml(rows, first_data, column_ids, ids), has_header, dimension


def _total_row(sheet: Sheet, kinds: list[str], first_data: int) -> list[tuple[Any, str]]:
    """(value, style) of the Total row: sums of the numeric columns, leaving out the rows that
    are subtotals themselves so that nothing is counted twice."""
    from openpyxl.utils import get_column_letter

    last = first_data + len(sheet.rows) - 1
    skipped = [first_data + r for r, raw in enumerate(sheet.rows) if is_subtotal_row(raw, kinds)]
    out: list[tuple[Any, str]] = []
    for c, kind in enumerate(kinds):
        if c == 0 and kind not in NUMERIC_TYPES:
            out.append(("Total", "total"))
        elif kind in NUMERIC_TYPES:
            formula = "=" + _sum_ranges(get_column_letter(c + 1), first_data, skipped, last)
            out.append((formula, "total:" + kind if kind in FORMATS else "total"))
        else:
            out.append((None, "total"))
    return out


_DIMENSION = re.compile(r'<dimension ref="[^"]*"\s*/>')


def _put_rows(sheet_xml: str, rows_xml: str, has_header: bool, dimension: str) -> str:
    """The sheet XML openpyxl wrote, with the data rows after the header row (or first)."""
    sheet_xml = _DIMENSION.sub(f'<dimension ref="{dimension}"/>', sheet_xml, count=1)
    if has_header:
        at = sheet_xml.index("</row>") + len("</row>")
        return sheet_xml[:at] + rows_xml + sheet_xml[at:]
    if "<sheetData/>" in sheet_xml or "<sheetData />" in sheet_xml:
        return re.sub(r"<sheetData\s*/>", f"<sheetData>{rows_xml}</sheetData>", sheet_xml, count=1)
    at = sheet_xml.index("<sheetData>") + len("<sheetData>")
    return sheet_xml[:at] + rows_xml + sheet_xml[at:]


def build_xlsx(title: str, sheets: list[Sheet], language: str = "fr") -> bytes:
    """The workbook: openpyxl writes its structure, styles and settings, and the data rows are
    then put in each sheet's XML (see _rows_xml)."""
    import zipfile

    from openpyxl import Workbook
    from openpyxl.workbook.properties import CalcProperties

    wb = Workbook()
    wb.properties.title = title
    wb.properties.creator = "Deblo"
    wb.properties.language = language_tag(language)
    # Excel and LibreOffice compute the formulas again on open (calc.py caches their values).
    wb.calculation = CalcProperties(fullCalcOnLoad=True)
    styles = _styles(wb)
    written = [_write_sheet(wb, sheet, styles) for sheet in sheets]
    first = io.BytesIO()
    wb.save(first)
    parts = {ws.path.lstrip("/"): (rows_xml, header, dim) for ws, rows_xml, header, dim in written}
    out = io.BytesIO()
    with zipfile.ZipFile(first) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename in parts:
                rows_xml, header, dim = parts[info.filename]
                data = _put_rows(data.decode("utf-8"), rows_xml, header, dim).encode("utf-8")
            dst.writestr(info.filename, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=6)
    return out.getvalue()
