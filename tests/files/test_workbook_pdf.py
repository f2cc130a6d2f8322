"""Workbooks with their numbers: formula values computed and cached in the file, and the workbook
converted to PDF with every total, every column and every amount whole, read back with poppler and
compared with LibreOffice's own rendering of the same workbook. No database."""

from __future__ import annotations

import io
import re
from pathlib import Path

import openpyxl
import pytest

from bot.documents.calc import FLAG, computed_workbook, with_values
from bot.documents.convert import converted
from bot.documents.extract import extract_text
from bot.documents.pdf import build_pdf
from bot.documents.xlsx import parse_workbook
from tests.support import render

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

# The accountant's journal, then the balance sheet built from it: subtotals, a Total row and
# cross-sheet references, all formulas (nothing the model computed itself).
JOURNAL = [
    ["Compte", "Libellé", "Débit (FCFA)", "Crédit (FCFA)", "Solde (FCFA)"],
    ["2154", "Matériel industriel", 120_000_000, 0, "=C2-D2"],
    ["2181", "Matériel de bureau", 8_500_000, 0, "=C3-D3"],
    ["5210", "Banque", 45_250_000, 1_250_000, "=C4-D4"],
    ["4011", "Fournisseurs", 0, 37_640_000, "=C5-D5"],
]
BILAN = [
    ["Poste", "Brut (FCFA)", "Amortissements (FCFA)", "Net (FCFA)"],
    ["Immobilisations corporelles", "=Journal!E2+Journal!E3", 94_825_000, "=B2-C2"],
    ["Trésorerie", "=Journal!E4", 0, "=B3-C3"],
    ["Sous-total actif", "=B2+B3", "=C2+C3", "=D2+D3"],
    ["Dettes fournisseurs", "=-Journal!E5", 0, "=B5-C5"],
    ["Total", "=B4+B5", "=C4+C5", "=D4+D5"],
]
# What the totals are, computed by hand.
TOTALS = {
    "Immobilisations": 128_500_000,
    "Trésorerie": 44_000_000,
    "Sous-total brut": 172_500_000,
    "Net immobilisations": 33_675_000,
    "Sous-total net": 77_675_000,
    "Total brut": 172_500_000 + 37_640_000,
    "Total net": 77_675_000 + 37_640_000,
}


def _balance_workbook() -> bytes:
    sheets = parse_workbook({
        "sheets": [
            {"name": "Journal", "rows": JOURNAL, "totals": True},
            {"name": "Bilan", "rows": BILAN},
        ]
    })
    computed = computed_workbook("Bilan 2024", sheets)
    assert computed.uncomputed == () and computed.computed >= 15
    return computed.data


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("workbook-pdf")


@pytest.fixture(scope="module")
def balance(out: Path) -> tuple[bytes, Path, Path]:
    """The workbook, our PDF of it and LibreOffice's PDF of it."""
    data = _balance_workbook()
    source = out / "bilan.xlsx"
    source.write_bytes(data)
    pdf = out / "bilan-ours.pdf"
    pdf.write_bytes(build_pdf(converted(data, "bilan.xlsx", XLSX, "Bilan 2024").document)[0])
    render.keep_pages(pdf, "workbook-pdf-balance", pages=2, dpi=90)
    return data, pdf, render.to_pdf(source, out / "lo")


def _amounts(text: str) -> set[int]:
    """Every amount of four digits or more in a text, whatever its separators and sign."""
    flat = text.replace("\u00a0", " ").replace("\u202f", " ")
    found = re.findall(r"(?<![\d,.])\d{1,3}(?:[ ,.]\d{3})+(?![\d])|(?<![\d,.])\d{4,}(?![\d])", flat)
    return {int(re.sub(r"[ ,.]", "", a)) for a in found}


def test_generated_workbook_caches_totals_and_cross_sheet_references(
    balance: tuple[bytes, Path, Path],
) -> None:
    wb = openpyxl.load_workbook(io.BytesIO(balance[0]), data_only=True)
    journal, bilan = wb["Journal"], wb["Bilan"]
    assert journal["E4"].value == 44_000_000 and journal["E6"].value == 134_860_000  # the Total row
    assert journal["C6"].value == 173_750_000 and journal["D6"].value == 38_890_000
    assert bilan["B2"].value == TOTALS["Immobilisations"] and bilan["B3"].value == TOTALS["Trésorerie"]
    assert bilan["D4"].value == TOTALS["Sous-total net"]
    assert bilan["B6"].value == TOTALS["Total brut"] and bilan["D6"].value == TOTALS["Total net"]
    formulas = openpyxl.load_workbook(io.BytesIO(balance[0]))["Bilan"]
    assert formulas["B3"].value == "=Journal!E4"  # still a formula for Excel to recompute


def test_balance_sheet_pdf_shows_every_total_libreoffice_shows(balance: tuple[bytes, Path, Path]) -> None:
    _data, ours, libreoffice = balance
    theirs = _amounts(render.text(libreoffice))
    shown = render.text(ours)
    assert set(TOTALS.values()) <= theirs  # LibreOffice computes them as we do
    assert theirs <= _amounts(shown), sorted(theirs - _amounts(shown))
    assert "172 500 000 FCFA" in shown.replace("\u00a0", " ")  # in the workbook's own format
    lines = [line for line in shown.splitlines() if "Sous-total actif" in line]
    assert len(lines) == 1 and "77 675 000 FCFA" in lines[0].replace("\u00a0", " ")


def test_uploaded_workbook_without_cached_values_is_computed_before_reading() -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Ventes"
    ws.append(["Produit", "Quantité", "Prix", "Montant"])
    ws.append(["Riz", 12, 25_000, "=B2*C2"])
    ws.append(["Huile", 30, 1_750, "=B3*C3"])
    ws.append(["Total", "=SUM(B2:B3)", None, "=SUM(D2:D3)"])
    ws["D4"].number_format = '#,##0 "FCFA"'
    buffer = io.BytesIO()
    wb.save(buffer)  # openpyxl, like many programs, saves formulas without their values
    data = buffer.getvalue()
    assert openpyxl.load_workbook(io.BytesIO(data), data_only=True)["Ventes"]["D4"].value is None
    text = extract_text(data, "ventes.xlsx", XLSX) or ""
    assert "352500" in text and "Total;42;" in text  # what read_user_file and search see
    document = converted(data, "ventes.xlsx", XLSX).document
    rows = [row for block in document.blocks for row in block.rows]
    assert ["Total", "42", "", "352\u00a0500 FCFA"] == list(rows[-1])


def test_a_formula_the_engine_cannot_compute_is_flagged_and_named() -> None:
    sheets = parse_workbook({
        "sheets": [{"name": "Calculs", "rows": [
            ["Taux", "Valeur"], ["a", 10], ["b", "=FOO(B2)"], ["c", "=B4"], ["d", "=B2*3"],
        ]}]
    })
    computed = computed_workbook("Calculs", sheets)
    notes = computed.notes()
    assert any(n.startswith("Calculs!B3 =FOO(B2)") and "FOO" in n.split("(", 2)[-1] for n in notes), notes
    assert any(n.startswith("Calculs!B4 =B4") and "circular" in n for n in notes), notes
    ws = openpyxl.load_workbook(io.BytesIO(computed.data), data_only=True)["Calculs"]
    assert ws["B3"].value == FLAG + "=FOO(B2)" and ws["B5"].value == 30
    found = converted(computed.data, "calculs.xlsx", XLSX)
    # generate_pdf names them to the model too, from the flags the file keeps.
    assert [n.split(" (")[0] for n in found.uncomputed] == [n.split(" (")[0] for n in notes]
    assert with_values(computed.data).data is computed.data  # cached now: nothing computed again


def test_thirty_columns_are_all_kept_with_the_first_column_repeated(out: Path) -> None:
    header = ["Poste", *(f"Mois {n:02d}" for n in range(1, 30))]
    rows = [header] + [[f"Ligne {r}", *(1_000_000 * r + 1_000 * c for c in range(1, 30))]
                       for r in range(1, 9)]
    data = computed_workbook("Large", parse_workbook({"sheets": [{"name": "Large", "rows": rows}]})).data
    pdf = out / "large.pdf"
    pdf.write_bytes(build_pdf(converted(data, "large.xlsx", XLSX, "Large").document)[0])
    render.keep_pages(pdf, "workbook-pdf-wide", pages=3, dpi=70)
    pages = render.pages_text(pdf)
    assert len(pages) >= 2
    for title in header[1:]:
        assert sum(title in page for page in pages) == 1, title  # every column, once
    for page in pages:
        assert "Poste" in page and "Ligne 8" in page  # the first column on every page
    assert "(suite," in pages[1]
    sizes = [(round(p.width), round(p.height)) for p in render.words(pdf)]
    assert sizes[:2] == [(842, 595), (842, 595)] and len(sizes) == len(pages)  # landscape, no blank page


def test_long_amounts_never_break_inside_their_digits(out: Path) -> None:
    rows: list[list[str | int]] = [["Libellé", "Montant (FCFA)", "Commentaire"]]
    rows += [[f"Poste {n}", 1_250_000_000 + n, "texte " * 30] for n in range(6)]
    data = computed_workbook("Montants", parse_workbook({"sheets": [{"name": "M", "rows": rows}]})).data
    pdf = out / "montants.pdf"
    pdf.write_bytes(build_pdf(converted(data, "m.xlsx", XLSX, "Montants").document)[0])
    shown = render.text(pdf).replace("\u00a0", " ")
    for n in range(6):
        assert f"1 250 000 00{n} FCFA" in shown
    assert not re.search(r"^\s*\d{3}( \d{3})*( FCFA)?\s*$", shown, re.M)  # no digits left alone on a line
