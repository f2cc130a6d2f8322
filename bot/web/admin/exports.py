"""CSV exports of a class (roster, results), safe to open in a spreadsheet: a cell that starts with
= + - @ (or a tab or carriage return) is prefixed with an apostrophe, so a name like `=HYPERLINK(…)`
stays text and never becomes a formula (OWASP's CSV injection advice)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

from aiohttp import web

from bot.web.admin.classes import Student
from bot.web.render import PAGE_HEADERS

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
ROSTER_HEADER = ["student_id", "name", "phone", "level", "last_activity", "joined_at"]
RESULTS_HEADER = ["student_id", "name", "answered_at", "subject", "skill", "correct", "source", "verified"]


def safe_cell(value: str) -> str:
    return "'" + value if value.startswith(_FORMULA_START) else value


def csv_text(header: list[str], rows: Iterable[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([safe_cell(cell) for cell in row])
    return out.getvalue()


def roster_rows(students: list[Student]) -> list[list[str]]:
    return [[str(s.user_id), s.name, s.phone, s.level,
             s.last_active.isoformat(timespec="seconds") if s.last_active else "",
             s.joined_at.isoformat(timespec="seconds") if s.joined_at else ""] for s in students]


def csv_response(filename: str, text: str) -> web.Response:
    headers = {**PAGE_HEADERS, "Content-Disposition": f'attachment; filename="{filename}"'}
    # A byte-order mark so that a spreadsheet opens the accents as UTF-8.
    return web.Response(body=("\ufeff" + text).encode(), content_type="text/csv", charset="utf-8",
                        headers=headers)
