"""Workbook values through the tools, on the test database: generate_xlsx names the formulas it
could not compute, and read_user_file and generate_pdf see an uploaded workbook's totals although
the file was saved without them."""

from __future__ import annotations

import io
from typing import Any

import openpyxl
import pytest

from bot import library
from tests.support.library import Library
from tools import by_name

# One backend: the database only holds the file; the document does not depend on it.
pytestmark = pytest.mark.one_backend

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def tool(name: str) -> Any:
    return by_name()[name]


async def test_generate_xlsx_names_what_it_could_not_compute(lib: Library) -> None:
    args = {"title": "Marge", "sheets": [{"name": "Calcul", "rows": [
        ["Poste", "Montant (FCFA)"], ["Ventes", 500_000], ["Achats", 320_000],
        ["Marge", "=B2-B3"], ["Taux", "=XIRR(B2:B3)"],
    ]}]}
    result = await tool("generate_xlsx").run(lib.ctx(lib.users[0]), args)
    assert result["success"], result
    assert [n.split(" (")[0] for n in result["uncomputed_formulas"]] == ["Calcul!B5 =XIRR(B2:B3)"]
    read = await tool("read_user_file").run(lib.ctx(lib.users[0]), {"file_id": result["file_id"]})
    assert "Marge;180000" in read["content"] and "⚠ =XIRR(B2:B3)" in read["content"]


async def test_an_uploaded_workbook_without_values_is_read_and_converted_with_them(lib: Library) -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Caisse"
    ws.append(["Jour", "Entrées", "Sorties", "Solde"])
    ws.append(["Lundi", 75_000, 12_500, "=B2-C2"])
    ws.append(["Mardi", 48_000, 9_000, "=D2+B3-C3"])
    buffer = io.BytesIO()
    wb.save(buffer)  # no cached values, as openpyxl and many programs save
    async with lib.services.sessions() as db:
        row = await library.add_file(lib.services, db, user_id=lib.users[0].id, name="caisse.xlsx",
                                     mime=XLSX, data=buffer.getvalue(), origin="upload")
        await db.commit()
    read = await tool("read_user_file").run(lib.ctx(lib.users[0]), {"file_id": row.id})
    assert "Mardi;48000;9000;101500" in read["content"]
    pdf = await tool("generate_pdf").run(lib.ctx(lib.users[0]), {"title": "", "source_file_id": row.id})
    assert pdf["success"] and "uncomputed_formulas" not in pdf
    async with lib.services.sessions() as db:
        made = await library.get_file(db, lib.users[0].id, pdf["file_id"])
    assert made is not None and "101500" in (made.text or "").replace("\u00a0", "").replace(" ", "")
