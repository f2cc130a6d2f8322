"""CSV exports of a class (roster, results), safe to open in any spreadsheet, whatever its language.

A spreadsheet reads a cell that starts with = + - @ (or a tab or carriage return) as a formula. A
French Excel splits a CSV on `;`, an English one on `,`, and one given a file made for the other
language splits it on the wrong character: a WhatsApp profile name `x;=1+1;y`, one quoted cell to
the writer, became the formula `=1+1` there. So every piece of a cell that either split could
start (the cell's start, and after each `,`, `;` or line break) is defused: an apostrophe goes before it
(OWASP's CSV injection advice), and it stays text whichever way the file is split. Every field is
quoted too. The separator and encoding follow the operator's language (the dashboard's, from the
browser): `;` and UTF-8 with a byte-order mark for French (what French Excel opens with its
accents), `,` and plain UTF-8 for English. Moments are in the school's time zone, as that
language's spreadsheet reads a date (« 10/03/2026 09:00 » / « 2026-03-10 09:00 »: bot.formats).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from aiohttp import web

from bot.formats import csv_time
from bot.school import ClassAssignment
from bot.texts import fr_en
from bot.web.admin.classes import Student
from bot.web.render import PAGE_HEADERS

ROSTER_HEADER = ["student_id", "name", "phone", "level", "last_activity", "joined_at"]
RESULTS_HEADER = ["student_id", "name", "answered_at", "subject", "skill", "correct", "source", "verified"]
# Where a spreadsheet may see a cell start (a line break too, for a reader that splits lines before
# quotes), and what makes that cell a formula there; spaces before it do not stop every
# spreadsheet, so the apostrophe goes before them.
_FORMULA_PIECE = re.compile(r"(^|[,;\n])( *[=+\-@\t\r])")


@dataclass(frozen=True)
class Dialect:
    separator: str
    bom: bool
    language: str
    zone: str  # the school's time zone, for every moment in the file

    def time(self, at: datetime | None) -> str:
        return csv_time(at, self.language, self.zone)


def dialect_of(lang: str, zone: str) -> Dialect:
    return fr_en(lang, Dialect(";", True, "fr", zone), Dialect(",", False, "en", zone))


def safe_cell(value: str) -> str:
    """The cell with an apostrophe before each piece that would start a formula, split on `,`, `;` or
    not at all."""
    return _FORMULA_PIECE.sub(r"\1'\2", value)


def csv_text(header: list[str], rows: Iterable[list[str]], dialect: Dialect) -> str:
    out = io.StringIO()
    writer = csv.writer(out, delimiter=dialect.separator, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    for row in [header, *rows]:
        writer.writerow([safe_cell(cell) for cell in row])
    return out.getvalue()


def roster_rows(students: list[Student], dialect: Dialect) -> list[list[str]]:
    return [[str(s.user_id), s.name, s.phone, s.level, dialect.time(s.last_active), dialect.time(s.joined_at)]
            for s in students]


def with_homework(rows: list[list[str]], students: list[Student],
                  homework: list[ClassAssignment]) -> tuple[list[str], list[list[str]]]:
    """The roster with a column per assignment, the oldest first (« homework 3: fractions (mar. 10
    mars) »): each student's right/asked once finished, else how far they are."""
    ordered = sorted(homework, key=lambda a: a.id)
    header = [*ROSTER_HEADER, *(f"homework {a.id}: {a.skill_label}" + (f" ({a.due})" if a.due else "")
                                for a in ordered)]
    return header, [[*row, *(a.scores.get(s.user_id, "") for a in ordered)] for row, s in zip(rows, students,
                                                                                              strict=True)]


def csv_response(filename: str, text: str, dialect: Dialect) -> web.Response:
    headers = {**PAGE_HEADERS, "Content-Disposition": f'attachment; filename="{filename}"'}
    body = ("\ufeff" + text if dialect.bom else text).encode()
    return web.Response(body=body, content_type="text/csv", charset="utf-8", headers=headers)
