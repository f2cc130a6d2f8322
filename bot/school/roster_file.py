"""A class list as a school keeps it: the CSV file of `cohorts import NAME FILE.csv`, read and
checked whole before anything is written.

The header is exactly `phone,name,level,parent_phone` (a spreadsheet saved with semicolons, as
French Excel does, is read too); the last three may be empty. The file must be UTF-8 (a byte-order
mark, which Excel writes, is fine). Every bad row is reported with its line number:
- a number is read with `phonenumbers`: with its country code (+225…, 00225…), or without it as a
  number of the default region (the country of DEFAULT_TIMEZONE); a parent's number without its
  country code is read in the student's country. A number a spreadsheet stripped of its `+`
  (2250701020304) is read with it put back;
- a level is one of bot.learning.LEVELS as a person types it (« CM2 », « 6ème »,
  « terminale »), and a class section after it is dropped (« Terminale D » → Tle, « 6e 3 » → 6e);
- a student's number appears once in the file, is not their parent's, and no student's number is
  another row's parent.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import phonenumbers

from bot.channel.inbound import clean_text
from bot.channel.locale import FRENCH_ZONES
from bot.learning import LEVELS, parse_level
from bot.school.errors import SchoolError

if TYPE_CHECKING:
    from _csv import Reader

__all__ = ["HEADER", "MAX_ROWS", "NAME_MAX", "RosterError", "RosterRow", "import_level", "read_roster",
           "region_of_zone"]

HEADER = ("phone", "name", "level", "parent_phone")
MAX_ROWS = 5000  # one transaction; a whole school is a few files
NAME_MAX = 100
MAX_REPORTED = 50  # problems listed; the rest counted
# A section after a level: a series (« D », « A2 ») or a class number (« 3 »), the shortest first
# (« 1ère A2 ») then the longest (« 6e3 »).
_SECTIONS = tuple(re.compile(rf"^(.*{lazy})[\s\-_/]*(?:s[ée]rie\s*)?(?:[a-z]\d?|\d{{1,2}})$", re.IGNORECASE)
                  for lazy in ("?", ""))


@dataclass(frozen=True)
class RosterRow:
    line: int  # in the file, 1 = the header
    phone: str  # E.164
    name: str | None
    level: str | None  # canonical (LEVELS)
    parent_phone: str | None  # E.164


class RosterError(SchoolError, ValueError):
    """The file cannot be imported; `problems` are « line N: what is wrong », in file order."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:MAX_REPORTED]
        more = len(problems) - len(shown)
        super().__init__("\n".join(shown + ([f"… and {more} more"] if more else [])))


def region_of_zone(zone: str) -> str | None:
    """The country whose numbers may be written without their code: the one of DEFAULT_TIMEZONE
    among the French-speaking countries served (bot.channel.locale), else None (codes required)."""
    return next((region for region, name in FRENCH_ZONES.items() if name == zone), None)


def import_level(text: str) -> str | None:
    """The canonical level of a class list's cell, a section after it dropped; None if unknown."""
    level = parse_level(text)
    for section in _SECTIONS:
        found = section.match(text.strip()) if level is None else None
        level = parse_level(found.group(1)) if found and found.group(1) else level
    return level


def _phone(raw: str, region: str | None) -> str | None:
    """E.164, or None when `raw` is not a valid number."""
    raw = raw.strip()
    candidates = [raw]
    if raw.isdigit() and len(raw) >= 11:
        candidates.append("+" + raw)  # a spreadsheet took the + away
    for candidate in candidates:
        try:
            number = phonenumbers.parse(candidate, None if candidate.startswith("+") else region)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
    return None


def _phone_problem(raw: str, what: str) -> str:
    if re.fullmatch(r"\d(?:[.,]\d+)?[eE]\+?\d+", raw.strip()):
        return (f"{what} {raw!r} was turned into a number by the spreadsheet: format the column as "
                "text and write the number in full")
    return f"{what} {raw!r} is not a valid phone number (write it with its country code, e.g. +2250701020304)"


def _region_of(phone: str) -> str | None:
    return phonenumbers.region_code_for_number(phonenumbers.parse(phone, None)) or None


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise RosterError([f"line {line}: the file is not UTF-8 text (save it as « CSV UTF-8 »)"]) from None


def _reader(text: str) -> Reader:
    first = text.split("\n", 1)[0].strip().rstrip("\r")
    delimiter = ";" if first.count(";") > first.count(",") else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    header = tuple(cell.strip() for cell in next(reader, []))
    if header != HEADER:
        raise RosterError([f"line 1: the header must be exactly {','.join(HEADER)}, found "
                           f"{','.join(header) or 'nothing'!r}"])
    return reader


def _row(line: int, cells: list[str], region: str | None, problems: list[str]) -> RosterRow | None:
    if len(cells) > len(HEADER):
        problems.append(f"line {line}: {len(cells)} fields, expected at most {len(HEADER)} "
                        f"({','.join(HEADER)})")
        return None
    raw_phone, raw_name, raw_level, raw_parent = (cell.strip() for cell in [*cells, "", "", ""][:4])
    bad = len(problems)
    phone = _phone(raw_phone, region) if raw_phone else None
    if not raw_phone:
        problems.append(f"line {line}: the phone is empty")
    elif phone is None:
        problems.append(f"line {line}: {_phone_problem(raw_phone, 'the phone')}")
    name = " ".join(clean_text(raw_name).split()) or None
    if name is not None and len(name) > NAME_MAX:
        problems.append(f"line {line}: the name is longer than {NAME_MAX} characters")
    level = import_level(raw_level) if raw_level else None
    if raw_level and level is None:
        problems.append(f"line {line}: {raw_level!r} is not a class; one of: {', '.join(LEVELS)}")
    parent = None
    if raw_parent:
        parent = _phone(raw_parent, _region_of(phone) if phone else region)
        if parent is None:
            problems.append(f"line {line}: {_phone_problem(raw_parent, 'the parent_phone')}")
        elif parent == phone:
            problems.append(f"line {line}: the parent_phone is the student's own number")
    if len(problems) > bad or phone is None:
        return None
    return RosterRow(line=line, phone=phone, name=name, level=level, parent_phone=parent)


def _cross_checks(rows: list[RosterRow], problems: list[str]) -> None:
    """A student once in the file; a student's number is nobody's parent in it."""
    first_line: dict[str, int] = {}
    for row in rows:
        if row.phone in first_line:
            problems.append(f"line {row.line}: {row.phone} is already on line {first_line[row.phone]}")
        else:
            first_line[row.phone] = row.line
    for row in rows:
        if row.parent_phone in first_line:
            problems.append(f"line {row.line}: the parent_phone {row.parent_phone} is the student of line "
                            f"{first_line[row.parent_phone]}")


def read_roster(data: bytes, region: str | None) -> list[RosterRow]:
    """The rows of a class list, every one checked; RosterError lists each bad row by line number.
    Blank lines are skipped."""
    reader = _reader(_text(data))
    problems: list[str] = []
    rows: list[RosterRow] = []
    count = 0
    try:
        for cells in reader:
            if not any(cell.strip() for cell in cells):
                continue
            count += 1
            if count > MAX_ROWS:
                raise RosterError([f"line {reader.line_num}: more than {MAX_ROWS} students: split the file"])
            row = _row(reader.line_num, cells, region, problems)
            if row is not None:
                rows.append(row)
    except csv.Error as exc:
        problems.append(f"line {reader.line_num}: the CSV cannot be read ({exc})")
    if not count and not problems:
        problems.append("line 2: the file has no student rows")
    _cross_checks(rows, problems)
    if problems:
        raise RosterError(sorted(problems, key=_line_of))
    return rows


def _line_of(problem: str) -> int:
    found = re.match(r"line (\d+)", problem)
    return int(found.group(1)) if found else 0
