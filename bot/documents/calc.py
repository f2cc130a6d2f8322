"""A workbook's formula values, computed in the bot's process by the `formulas` engine and written
into the file as the cached values every reader shows (the PDF converter, read_user_file, search,
a phone's viewer that does not recalculate).

The sheet XML is read and rewritten here with lxml: one parse per sheet, and only formula cells
without a cached value are computed (a workbook saved by Excel keeps its own values). The engine
compiles one formula per shape, not per cell: `=B2+C2` and `=B3+C3` are the same formula moved,
so ten thousand rows of a running balance compile once. A formula the engine cannot compute
(an unknown function, a circular or external reference, an error value) is kept with its text
shown, flagged with FLAG, and listed so the model can tell the user.
"""

from __future__ import annotations

import io
import logging
import re
import zipfile
from dataclasses import dataclass, field
from typing import Any

from bot.documents.errors import DocumentError
from bot.documents.xlsx import Sheet, build_xlsx

FLAG = "⚠ "
# Formulas are compiled once per shape, as if written in this far cell, so that no relative
# reference of a real sheet (at most 10,000 rows, 50 columns here; Excel's own limits elsewhere)
# falls off the grid when moved there.
ANCHOR = "AAA100000"
MAX_FORMULAS = 100_000

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_NS = {"m": _MAIN}


@dataclass(frozen=True)
class Uncomputed:
    sheet: str
    cell: str
    formula: str
    reason: str

    def for_model(self) -> str:
        return f"{self.sheet}!{self.cell} {self.formula} ({self.reason})"


@dataclass(frozen=True)
class Computed:
    data: bytes
    computed: int = 0
    uncomputed: tuple[Uncomputed, ...] = ()

    def notes(self, limit: int = 10) -> list[str]:
        """The formulas left uncomputed, as the model is told them (the first `limit`)."""
        return [u.for_model() for u in self.uncomputed[:limit]]


class _Failed(DocumentError):
    """A formula the engine could not compute; the message says why."""


@dataclass
class _Grid:
    """One sheet's cells: values by (row, column), formula cells by the same key."""

    name: str
    part: str
    root: Any
    values: dict[tuple[int, int], Any] = field(default_factory=dict)
    formulas: dict[tuple[int, int], tuple[str, Any]] = field(default_factory=dict)  # text, <c>
    max_row: int = 0


def computed_workbook(title: str, sheets: list[Sheet], language: str = "fr") -> Computed:
    """The generated workbook with its formula values cached (what generate_xlsx stores)."""
    return with_values(build_xlsx(title, sheets, language))


def with_values(data: bytes) -> Computed:
    """The workbook with a cached value for every formula cell that had none; the bytes as they
    were when every formula has one (or when the file is not a workbook we can read)."""
    try:
        book = _Book.read(data)
    except (KeyError, ValueError, zipfile.BadZipFile, SyntaxError):
        return Computed(data)
    todo = [(g, key) for g in book.grids for key, (_t, c) in g.formulas.items() if _missing(c)]
    if not todo:  # formulas flagged when the file was made are still named
        flagged = [
            Uncomputed(g.name, _coordinate(key), text, "not computed")
            for g in book.grids for key, (text, _c) in g.formulas.items()
            if str(g.values.get(key) or "").startswith(FLAG)
        ]
        return Computed(data, uncomputed=tuple(flagged))
    _load_functions({name for g in book.grids for text, _c in g.formulas.values()
                     for name in _CALLED.findall(_STRING.sub("", text).upper())})
    engine = _Engine(book)
    out: list[Uncomputed] = []
    for grid, key in todo[:MAX_FORMULAS]:
        text, cell = grid.formulas[key]
        try:
            _write(cell, engine.value(grid, key))
        except _Failed as exc:
            _write(cell, FLAG + text)
            out.append(Uncomputed(grid.name, _coordinate(key), text, str(exc)))
    return Computed(book.write(), computed=len(todo) - len(out), uncomputed=tuple(out))


_CALLED = re.compile(r"([A-Z_][A-Z0-9._]*)\s*\(")
_STRING = re.compile(r'"[^"]*"')


def _load_functions(called: set[str]) -> None:
    """The engine's functions, without its statistics module (scipy.stats: seconds to import in
    each document process) unless a formula calls a function only that module has."""
    from formulas import functions

    every = list(functions.SUBMODULES)
    functions.SUBMODULES = [m for m in every if m not in (".stat", ".comp")]  # .comp imports .stat
    try:
        functions.get_functions.cache_clear()
        light = functions.get_functions()
    finally:
        functions.SUBMODULES = every
    if not called <= set(light):
        functions.get_functions.cache_clear()
        functions.get_functions()


def _missing(cell: Any) -> bool:
    v = cell.find("m:v", _NS)
    return v is None or not (v.text or "")


def _coordinate(key: tuple[int, int]) -> str:
    from openpyxl.utils import get_column_letter

    return f"{get_column_letter(key[1])}{key[0]}"


def _write(cell: Any, value: Any) -> None:
    from lxml import etree

    for v in cell.findall("m:v", _NS):
        cell.remove(v)
    v = etree.SubElement(cell, f"{{{_MAIN}}}v")
    if isinstance(value, bool):
        cell.set("t", "b")
        v.text = "1" if value else "0"
    elif isinstance(value, int | float):
        cell.attrib.pop("t", None)
        whole = not isinstance(value, float) or value.is_integer()
        v.text = str(int(value)) if whole else repr(float(value))
    else:
        cell.set("t", "str")
        v.text = str(value)


@dataclass
class _Book:
    parts: dict[str, bytes]
    grids: list[_Grid]

    @classmethod
    def read(cls, data: bytes) -> _Book:
        from lxml import etree

        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            parts = {info.filename: zf.read(info.filename) for info in zf.infolist()}
        workbook = etree.fromstring(parts["xl/workbook.xml"])
        rels = etree.fromstring(parts["xl/_rels/workbook.xml.rels"])
        targets = {r.get("Id"): r.get("Target") for r in rels.iter(f"{{{_PKG_REL}}}Relationship")}
        strings = _shared_strings(parts.get("xl/sharedStrings.xml"))
        grids = []
        for sheet in workbook.iter(f"{{{_MAIN}}}sheet"):
            target = targets[sheet.get(f"{{{_REL}}}id")] or ""
            part = target.lstrip("/") if target.startswith("/") else "xl/" + target
            if part not in parts:
                continue
            grid = _Grid(sheet.get("name") or "", part, etree.fromstring(parts[part]))
            _load(grid, strings)
            grids.append(grid)
        return cls(parts, grids)

    def write(self) -> bytes:
        from lxml import etree

        for grid in self.grids:
            self.parts[grid.part] = etree.tostring(grid.root, xml_declaration=True, encoding="UTF-8",
                                                   standalone=True)
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, body in self.parts.items():
                zf.writestr(name, body, compress_type=zipfile.ZIP_DEFLATED, compresslevel=6)
        return out.getvalue()


def _shared_strings(xml: bytes | None) -> list[str]:
    if not xml:
        return []
    from lxml import etree

    root = etree.fromstring(xml)
    return ["".join(t.text or "" for t in si.iter(f"{{{_MAIN}}}t")) for si in root.iter(f"{{{_MAIN}}}si")]


def _load(grid: _Grid, strings: list[str]) -> None:
    """Values and formulas of one sheet; shared formulas moved to each cell that uses them."""
    from openpyxl.formula.translate import Translator
    from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

    masters: dict[str, tuple[str, str]] = {}
    for c in grid.root.iter(f"{{{_MAIN}}}c"):
        ref = c.get("r") or ""
        letters, row = coordinate_from_string(ref)
        key = (row, column_index_from_string(letters))
        grid.max_row = max(grid.max_row, row)
        f = c.find("m:f", _NS)
        if f is not None:
            text = "=" + (f.text or "")
            if f.get("t") == "shared":
                si = f.get("si") or ""
                if f.text:
                    masters[si] = (text, ref)
                elif si in masters:
                    text = Translator(masters[si][0], origin=masters[si][1]).translate_formula(ref)
            if text != "=":
                grid.formulas[key] = (text, c)
        grid.values[key] = _cached(c, strings)


def _cached(c: Any, strings: list[str]) -> Any:
    kind = c.get("t")
    if kind == "inlineStr":
        return "".join(t.text or "" for t in c.iter(f"{{{_MAIN}}}t"))
    v = c.find("m:v", _NS)
    text = v.text if v is not None else None
    if text is None or text == "":
        return None
    if kind == "s":
        return strings[int(text)] if text.isdigit() and int(text) < len(strings) else ""
    if kind == "b":
        return text == "1"
    if kind in ("str", "e"):
        return text
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


class _Engine:
    """Computes formula cells on demand (the cells they read first), each once."""

    def __init__(self, book: _Book) -> None:
        self.sheets = {g.name.casefold(): g for g in book.grids}
        self.done: dict[tuple[str, tuple[int, int]], Any] = {}
        self.running: set[tuple[str, tuple[int, int]]] = set()
        self.compiled: dict[str, Any] = {}

    def value(self, grid: _Grid, key: tuple[int, int]) -> Any:
        ident = (grid.name, key)
        if ident in self.done:
            found = self.done[ident]
            if isinstance(found, _Failed):
                raise found
            return found
        if ident in self.running:
            raise _Failed("circular reference")
        self.running.add(ident)
        try:
            result = self._compute(grid, key)
        except _Failed as exc:
            self.done[ident] = exc
            raise
        except RecursionError:
            self.done[ident] = _Failed("formulas nested too deep")
            raise self.done[ident] from None
        finally:
            self.running.discard(ident)
        self.done[ident] = result
        return result

    def _compute(self, grid: _Grid, key: tuple[int, int]) -> Any:
        from openpyxl.formula.translate import Translator, TranslatorError

        text = grid.formulas[key][0]
        here = _coordinate(key)
        try:
            shape = Translator(text, origin=here).translate_formula(ANCHOR)
        except (TranslatorError, ValueError):
            shape, here = text, ANCHOR
        func = self._compile(shape)
        args = []
        for name in func.inputs:
            ref = name if here == ANCHOR else _moved(name, here)
            args.append(self._input(grid, ref))
        try:
            result = func(*args)
        except Exception as exc:  # the engine's own failure: unknown function, bad arguments
            raise _Failed(_reason(exc)) from None
        return _plain(result)

    def _compile(self, shape: str) -> Any:
        func = self.compiled.get(shape)
        if func is None:
            import formulas

            # The engine logs each failed function with its traceback; the failure is told here.
            logging.getLogger("schedula").setLevel(logging.CRITICAL)
            try:
                func = formulas.Parser().ast(shape)[1].compile()
            except Exception as exc:  # a formula the engine cannot read
                raise _Failed(_reason(exc)) from None
            self.compiled[shape] = func
        return func

    def _input(self, grid: _Grid, ref: str) -> Any:
        import numpy as np
        from openpyxl.utils.cell import range_boundaries

        sheet = grid
        if "!" in ref:
            name, ref = ref.rsplit("!", 1)
            found = self.sheets.get(name.strip("'").replace("''", "'").casefold())
            if found is None:
                raise _Failed(f"no sheet named {name}")
            sheet = found
        try:
            left, top, right, bottom = range_boundaries(ref.replace("$", ""))
        except (TypeError, ValueError):
            raise _Failed(f"{ref} is not a cell range this engine reads") from None
        top, bottom = top or 1, min(bottom or sheet.max_row, max(sheet.max_row, 1))
        if left is None or right is None:
            raise _Failed(f"{ref} is not a cell range this engine reads")
        if top == bottom and left == right:
            return self._cell(sheet, (top, left))
        cells = [[self._cell(sheet, (r, c)) for c in range(left, right + 1)] for r in range(top, bottom + 1)]
        return np.array(cells, dtype=object)

    def _cell(self, sheet: _Grid, key: tuple[int, int]) -> Any:
        from schedula import EMPTY

        if key in sheet.formulas and sheet.values.get(key) is None:
            return self.value(sheet, key)
        value = sheet.values.get(key)
        return EMPTY if value is None else value


def _moved(name: str, here: str) -> str:
    from openpyxl.formula.translate import Translator

    formula: str = Translator("=" + name, origin=ANCHOR).translate_formula(here)
    return formula[1:]


def _plain(result: Any) -> Any:
    """A Python value from the engine's answer; an error value is a formula not computed."""
    import numpy as np
    from formulas.tokens.operand import XlError
    from schedula import EMPTY

    value = result
    if isinstance(value, np.ndarray):
        flat = value.ravel()
        if not len(flat):
            return 0
        value = flat[0]
    if isinstance(value, XlError):
        raise _Failed(str(value))
    if value is EMPTY or value is None:
        return 0
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool | int | float | str):
        return value
    raise _Failed(f"a value of type {type(value).__name__}")


def _reason(exc: BaseException) -> str:
    args = exc.args
    if len(args) >= 2 and isinstance(args[0], str) and "DISPATCHING" in args[0]:
        return f"the function {args[1]} is not supported"
    text = str(exc)
    return (text.splitlines() or [type(exc).__name__])[0][:200] or type(exc).__name__
