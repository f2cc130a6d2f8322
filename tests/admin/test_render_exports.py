"""The dashboard's CSV exports opened as the spreadsheets of both languages open them: a WhatsApp
profile name that is one cell to the writer must not become a formula in an Excel that splits on
`;` (French) or on `,` (English), nor in LibreOffice Calc evaluating formulas."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from pathlib import Path

import openpyxl
from sqlalchemy import select

from bot.storage.models import User
from tests.support.admin import add_result, logged_in, make_cohort, make_operator
from tests.support.harness import Harness
from tests.support.render import csvs_to_xlsx

PHONE = "+2250700000451"
HOSTILE = "x;=1+1;y"
FRENCH = {"Accept-Language": "fr-FR,fr;q=0.9,en;q=0.5"}
ENGLISH = {"Accept-Language": "en-GB,en;q=0.9,fr;q=0.5"}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def formula_cells(text: str, separator: str) -> list[str]:
    """The cells that start a formula when the file is split on `separator` without regard to
    quotes (the worst reader), a quote around a piece taken off as a spreadsheet does."""
    lines = text.lstrip("\ufeff").split("\r\n")
    pieces = [piece.strip('"') for line in lines for piece in line.split(separator)]
    return [piece for piece in pieces if piece.startswith(FORMULA_START)]


async def test_a_profile_name_that_splits_into_a_formula_stays_text_in_every_excel(
        harness: Harness, tmp_path: Path) -> None:
    h = harness
    # The name comes as an attacker sends it: the WhatsApp profile name of a webhook.
    assert (await h.inbound(PHONE, "Bonjour", extra={"ProfileName": HOSTILE}))[0] == 200
    await h.settle()
    async with h.services.sessions() as db:
        user = await db.scalar(select(User).where(User.phone == PHONE))
    assert user is not None and user.display_name == HOSTILE
    await make_cohort(h, "3e", [user])
    await add_result(h, user.id, "-Équations;@x", True, h.clock() - timedelta(days=1))
    await make_operator(h, "admin@ecole.ci")
    admin = await logged_in(h, "admin@ecole.ci")
    try:
        exports = {(lang, what): await admin.get(f"/admin/cohorts/3e/{what}.csv", headers)
                   for lang, headers in (("fr", FRENCH), ("en", ENGLISH)) for what in ("roster", "results")}
    finally:
        await admin.close()
    for (lang, what), (status, body, resp) in exports.items():
        assert status == 200 and resp.headers["Content-Type"] == "text/csv; charset=utf-8"
        separator = ";" if lang == "fr" else ","
        assert body.startswith("\ufeff") is (lang == "fr")  # French Excel reads UTF-8 by its BOM
        rows = list(csv.reader(io.StringIO(body.lstrip("\ufeff")), delimiter=separator))
        assert rows[1][1] == "x;'=1+1;y", (lang, what)
        lines = body.lstrip("\ufeff").split("\r\n")
        assert all(line.startswith('"') and line.endswith('"') for line in lines if line)  # all quoted
        for split_on in (";", ","):  # the file's own separator, and the other language's
            assert formula_cells(body, split_on) == [], (lang, what, split_on)
    # LibreOffice Calc, told the French file's `;` and UTF-8, and to evaluate formulas: a control
    # file shows that it does make a formula of a cell that starts one.
    french = tmp_path / "roster-fr.csv"
    french.write_bytes(exports["fr", "roster"][1].encode())
    control = tmp_path / "control.csv"
    control.write_bytes(b'"name";"total"\r\n"x";=1+1\r\n')
    opened = csvs_to_xlsx([french, control], tmp_path / "xlsx", ";")
    sheets = [openpyxl.load_workbook(path).active for path in opened]
    cells = [[(c.value, c.data_type) for row in sheet.iter_rows() for c in row] for sheet in sheets if sheet]
    assert ("=1+1", "f") in cells[1]
    assert [c for c in cells[0] if c[1] == "f"] == []
    assert ("x;'=1+1;y", "s") in cells[0] and (f"'{PHONE}", "s") in cells[0]
