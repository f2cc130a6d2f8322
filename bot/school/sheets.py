"""A table as a school sends it: a CSV from any spreadsheet or an XLSX workbook, read into rows of
named cells, each with its line number, before any meaning is given to them.

A school's files are made by French Excel as often as by anything else, so the reader takes what it
writes: `;` or `,` (or tab) between cells, UTF-8 with or without its byte-order mark, UTF-16 with one
(« Texte Unicode »), or Windows-1252 (« CSV (séparateur : point-virgule) »). The encoding is
decided, never guessed: a file that is UTF-8 in one place and not in another is refused with the
line where it stops being text, rather than read as Windows-1252 and stored as mojibake; a
Windows-1252 byte that means nothing (0x81, 0x8D, 0x8F, 0x90, 0x9D) or a control character names
its line too.

Headers are matched folded (case, accents, spaces, hyphens and apostrophes ignored: « Téléphone
parent », « telephone_parent » and « TÉLÉPHONE-PARENT » are one header) against the aliases each
kind of file declares; an unknown or repeated header is an error that names it and lists the names
accepted. Messages are French or English, in the operator's language.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime

from bot.school.errors import SchoolError
from bot.texts import fr_en

__all__ = ["MAX_REPORTED", "SheetError", "Table", "fold_header", "in_line_order", "line_label", "problem_at",
           "read_table", "too_many_rows"]

MAX_REPORTED = 50  # problems listed; the rest counted
_UNDEFINED_1252 = frozenset(b"\x81\x8d\x8f\x90\x9d")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_XLSX_MAGIC = b"PK\x03\x04"


class SheetError(SchoolError, ValueError):
    """The file cannot be imported; `problems` are « line N: what is wrong » (« ligne N : … »), in
    file order."""

    def __init__(self, problems: list[str], language: str | None = "fr") -> None:
        self.problems = problems
        shown = problems[:MAX_REPORTED]
        more = len(problems) - len(shown)
        tail = [fr_en(language, f"… et {more} de plus", f"… and {more} more")] if more else []
        super().__init__("\n".join(shown + tail))


@dataclass(frozen=True)
class Table:
    """The rows of a file under canonical column names; `line` counts from 1 (the header)."""

    columns: tuple[str, ...]
    rows: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    # Rows left out because they cannot be read as the header says (more cells than columns): the
    # caller reports them with the problems it finds in the other rows, so that one try shows all.
    problems: list[str] = field(default_factory=list)


def line_label(language: str | None, line: int) -> str:
    return fr_en(language, f"ligne {line}", f"line {line}")


def problem_at(language: str | None, line: int, fr: str, en: str) -> str:
    """« ligne N : … » or « line N: … », as every problem of a file is said."""
    return f"{line_label(language, line)}: {fr_en(language, fr, en)}"


def in_line_order(problems: list[str]) -> list[str]:
    """A file's problems in the order of the lines they name (« ligne N : … »); stable, so a line's
    own problems keep their order."""
    def line_of(problem: str) -> int:
        found = re.match(r"(?:line|ligne) (\d+)", problem)
        return int(found.group(1)) if found else 0

    return sorted(problems, key=line_of)


def too_many_rows(table: Table, limit: int, language: str | None, what_fr: str, what_en: str) -> str | None:
    """The problem of a file with more than `limit` rows (« plus de 5000 élèves »), named at the
    first row past it; None within it."""
    if len(table.rows) <= limit:
        return None
    return problem_at(language, table.rows[limit][0],
                      f"plus de {limit} {what_fr} : coupez le fichier en plusieurs",
                      f"more than {limit} {what_en}: split the file")


def fold_header(text: str) -> str:
    """A header as compared: lower case, no accents, words joined by `_` (« N° Téléphone » →
    « n_telephone »)."""
    plain = unicodedata.normalize("NFKD", text.strip().lstrip("\ufeff")).encode("ascii", "ignore").decode()
    return "_".join(re.findall(r"[a-z0-9]+", plain.lower()))


def _line_of(data: bytes, offset: int) -> int:
    return data[:offset].count(b"\n") + 1


def _decode(data: bytes, language: str | None) -> str:
    """The text of a CSV file in the encodings spreadsheets write, or SheetError naming the line."""
    encodings: tuple[str, ...]
    if data.startswith(b"\xef\xbb\xbf"):
        data, encodings = data[3:], ("utf-8",)
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encodings = ("utf-16",)
    else:
        encodings = ("utf-8", "cp1252")
    try:
        text = data.decode(encodings[0])
    except UnicodeDecodeError as exc:
        # UTF-8 elsewhere in the file (an « é » written as two bytes) means it is not Windows-1252
        # either: a file pasted together from two sources. Reading it one way would spoil the rest.
        if len(encodings) == 1 or re.search(rb"[\xc2-\xf4][\x80-\xbf]", data[: exc.start]):
            raise SheetError([f"{line_label(language, _line_of(data, exc.start))}: " + fr_en(
                language, "le texte n'est pas lisible (enregistrez le fichier en « CSV UTF-8 »)",
                "the text cannot be read (save the file as « CSV UTF-8 »)")], language) from None
        bad = next((i for i, byte in enumerate(data) if byte in _UNDEFINED_1252), None)
        if bad is not None:
            raise SheetError([f"{line_label(language, _line_of(data, bad))}: " + fr_en(
                language, "un caractère illisible (enregistrez le fichier en « CSV UTF-8 »)",
                "an unreadable character (save the file as « CSV UTF-8 »)")], language) from None
        text = data.decode("cp1252")
    return text


def _control_problems(text: str, language: str | None) -> list[str]:
    return [f"{line_label(language, number)}: " + fr_en(language, "un caractère de contrôle dans le texte",
                                                       "a control character in the text")
            for number, line in enumerate(text.split("\n"), start=1) if _CONTROL.search(line)]


def _csv_rows(data: bytes, language: str | None) -> list[tuple[int, list[str]]]:
    text = _decode(data, language)
    problems = _control_problems(text, language)
    if problems:
        raise SheetError(problems, language)
    first = text.split("\n", 1)[0]
    delimiter = max((";", ",", "\t"), key=first.count)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows: list[tuple[int, list[str]]] = []
    try:
        for cells in reader:
            rows.append((reader.line_num, cells))
    except csv.Error as exc:
        raise SheetError([problem_at(language, reader.line_num, f"le CSV ne peut pas être lu ({exc})",
                                     f"the CSV cannot be read ({exc})")], language) from None
    return rows


def _cell_text(value: object) -> str:
    """A workbook cell as the text a person typed: 2250701020304.0 is the number 2250701020304, a
    date is its day."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime):
        return value.date().isoformat() if value.time() == datetime.min.time() else value.isoformat(" ")
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _xlsx_rows(data: bytes, language: str | None) -> list[tuple[int, list[str]]]:
    import openpyxl  # only for workbooks: the CSV path does not pay for loading it

    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception:  # a damaged or foreign zip raises any of a dozen errors
        raise SheetError([fr_en(language, "le classeur ne peut pas être ouvert (enregistrez-le en .xlsx)",
                                "the workbook cannot be opened (save it as .xlsx)")], language) from None
    try:
        sheet = workbook.worksheets[0]
        return [(number, [_cell_text(value) for value in values])
                for number, values in enumerate(sheet.iter_rows(values_only=True), start=1)]
    finally:
        workbook.close()


def _columns(header: list[str], aliases: Mapping[str, str], language: str | None) -> tuple[str, ...]:
    folded = {fold_header(alias): name for alias, name in aliases.items()}
    columns: list[str] = []
    problems: list[str] = []
    for cell in header:
        name = folded.get(fold_header(cell)) if cell.strip() else ""
        if name is None:
            accepted = ", ".join(dict.fromkeys(aliases))
            problems.append(f"{line_label(language, 1)}: " + fr_en(
                language, f"colonne inconnue « {cell.strip()} » ; colonnes acceptées : {accepted}",
                f"unknown column « {cell.strip()} »; accepted columns: {accepted}"))
        elif name and name in columns:
            problems.append(problem_at(language, 1, f"la colonne « {cell.strip()} » est en double",
                                       f"the column « {cell.strip()} » is repeated"))
        columns.append(name or "")
    if problems:
        raise SheetError(problems, language)
    return tuple(columns)


def read_table(data: bytes, filename: str, aliases: Mapping[str, str], required: tuple[str, ...],
               language: str | None = "fr") -> Table:
    """The file's rows under canonical names (`aliases` maps every accepted header to its name);
    blank rows and cells under a blank header are dropped, rows longer than the header are named in
    `Table.problems`. SheetError when the file cannot be read, a header is unknown or repeated, or a
    `required` column is missing."""
    is_xlsx = filename.lower().endswith((".xlsx", ".xlsm")) or data.startswith(_XLSX_MAGIC)
    raw = _xlsx_rows(data, language) if is_xlsx else _csv_rows(data, language)
    while raw and not any(cell.strip() for cell in raw[0][1]):
        raw.pop(0)  # a title row left empty above the header
    if not raw:
        raise SheetError([problem_at(language, 1, "le fichier est vide", "the file is empty")], language)
    header_line, header = raw[0]
    columns = _columns(header, aliases, language)
    missing = [name for name in required if name not in columns]
    if missing:
        raise SheetError([f"{line_label(language, header_line)}: " + fr_en(
            language, f"colonne obligatoire absente : {', '.join(missing)}",
            f"required column missing: {', '.join(missing)}")], language)
    rows, problems = [], []
    for line, cells in raw[1:]:
        if any(cell.strip() for cell in cells[len(columns):]):
            problems.append(f"{line_label(language, line)}: " + fr_en(
                language, f"{len(cells)} cellules remplies pour {len(columns)} colonnes",
                f"{len(cells)} cells filled for {len(columns)} columns"))
        elif any(cell.strip() for cell in cells):
            rows.append((line, {name: cell.strip() for name, cell in zip(columns, cells, strict=False)
                                if name}))
    return Table(columns=tuple(name for name in columns if name), rows=rows, problems=problems)
