"""Tables as a person sees them: the PDF read back with poppler, the workbook and the Word file
rendered by LibreOffice headless, then the text, word boxes, page sizes and totals checked.

No database: these tests build files in memory and render them. The first pages are kept as PNG
in tests/support/render.OUTPUT_DIR (/tmp/deblo-render by default) for a person to look at.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

import openpyxl
import pytest
from pypdf import PdfReader
from pypdf.generic import DictionaryObject, PdfObject

from bot.documents.convert import parse_document
from bot.documents.docx import build_docx
from bot.documents.pdf import SYMBOLS_FONT, build_pdf, markup
from bot.documents.xlsx import build_xlsx, parse_workbook
from tests.support import render

HEADER = ["Réf.", "Actif", "Brut", "Amort. et dépréc.", "Net 2024", "Net 2023"]
# A SYSCOHADA balance sheet (actif): every amount is a different string, so that each one can be
# found on the rendered page; negatives in parentheses and with « − », a « — », a bold total.
BALANCE = [
    ["AD", "Immobilisations incorporelles", "120 000 000", "(92 700 000)", "27 300 000", "31 450 000"],
    ["AE", "Frais de développement et de prospection", "8 500 000", "− 2 125 000", "6 375 000", "—"],
    ["AI", "Terrains", "450 000 000", "0", "450 000 001", "450 000 002"],
    ["AJ", "Bâtiments", "1 250 000 000", "(375 000 000)", "875 000 000", "937 500 000"],
    ["AN", "Matériel et biens biologiques", "96 400 000", "(48 200 000)", "48 200 001", "55 000 001"],
    [
        "AZ",
        "**Total actif immobilisé**",
        "**1 924 900 000**",
        "**(518 025 000)**",
        "**1 406 875 002**",
        "**1 473 950 002**",
    ],
]
AMOUNT_COLUMNS = range(2, 6)
MONTHS = ["Janv.", "Févr.", "Mars", "Avril", "Mai", "Juin", "Juil.", "Août", "Sept.", "Oct.", "Nov."]
LABEL = "Achats de marchandises et fournitures diverses"


def _words(text: str) -> str:
    return text.replace("**", "").replace("\u00a0", " ").replace("\u202f", " ")


def _balance_doc(language: str = "fr") -> dict[str, object]:
    return {
        "title": "Bilan SYSCOHADA : exercice 2024",
        "subtitle": "Société Ivoirienne de Négoce, Abidjan",
        "blocks": [
            {"type": "heading", "text": "Actif"},
            {"type": "table", "columns": HEADER, "rows": BALANCE},
            {"type": "paragraph", "text": "Montants en FCFA ; la note 3 détaille les amortissements."},
        ],
    }


@dataclass(frozen=True)
class Rendered:
    pdf: Path
    pages: list[render.Page]
    layout: str


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tables")


# --- PDF ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def balance_pdf(out: Path) -> Rendered:
    pdf = out / "bilan.pdf"
    pdf.write_bytes(build_pdf(parse_document(_balance_doc()))[0])
    render.keep_pages(pdf, "tables-pdf-balance", pages=1)
    return Rendered(pdf, render.words(pdf), _words(render.text(pdf)))


def _entry(dictionary: PdfObject, key: str) -> DictionaryObject:
    value = dictionary[key] if isinstance(dictionary, DictionaryObject) else None
    assert isinstance(value, DictionaryObject), (key, value)
    return value


def _fonts(pdf: Path) -> set[str]:
    return {
        str(font.get_object()["/BaseFont"])
        for page in PdfReader(pdf).pages
        for font in _entry(_entry(page, "/Resources"), "/Font").values()
    }


def _lines(pages: list[render.Page]) -> list[list[render.Word]]:
    """Words drawn on the same baseline, left to right."""
    lines: dict[tuple[int, int], list[render.Word]] = {}
    for page in pages:
        for word in page.words:
            lines.setdefault((page.number, round(word.y1)), []).append(word)
    return [sorted(words, key=lambda w: w.x0) for words in lines.values()]


def _right_edge(lines: list[list[render.Word]], text: str) -> float:
    """Where `text` ends on the page: it must be drawn whole on one line (amounts are unique)."""
    tokens = _words(text).split()
    for line in lines:
        drawn = [_words(w.text) for w in line]
        for i in range(len(drawn) - len(tokens) + 1):
            if " ".join(drawn[i : i + len(tokens)]).split() == tokens:
                return line[i + len(tokens) - 1].x1
    raise AssertionError(f"{text!r} is not drawn whole on one line")


def _x1_by_column(pages: list[render.Page], rows: list[list[str]]) -> dict[int, list[float]]:
    """Right edge of each amount cell as drawn, by column."""
    lines = _lines(pages)
    return {col: [_right_edge(lines, row[col]) for row in rows] for col in AMOUNT_COLUMNS}


def test_pdf_balance_sheet_amounts_whole_on_one_line(balance_pdf: Rendered) -> None:
    lines = balance_pdf.layout.splitlines()
    for row in BALANCE:
        for col in AMOUNT_COLUMNS:
            amount = _words(row[col])
            assert any(amount in line for line in lines), f"{amount!r} is broken across lines"
    # Short header words and label words are not cut either ("Compt / e").
    drawn = {_words(w.text) for page in balance_pdf.pages for w in page.words}
    for text in [*HEADER, *(row[1] for row in BALANCE)]:
        for word in _words(text).split():
            assert word in drawn, f"{word!r} of {text!r} is cut"


def test_pdf_amounts_are_right_aligned_whatever_the_cell_holds(balance_pdf: Rendered) -> None:
    edges = _x1_by_column(balance_pdf.pages, BALANCE)
    for col, xs in edges.items():
        assert max(xs) - min(xs) < 1.0, (HEADER[col], xs)  # bold total and « — » included
    assert sorted(edges[c][0] for c in AMOUNT_COLUMNS) == [edges[c][0] for c in AMOUNT_COLUMNS]


def test_pdf_is_a4_and_says_its_language(balance_pdf: Rendered) -> None:
    size = render.info(balance_pdf.pdf)
    assert (round(size.width_mm), round(size.height_mm)) == (210, 297)
    assert _entry(PdfReader(balance_pdf.pdf).trailer, "/Root")["/Lang"] == "fr-FR"
    english = build_pdf(parse_document(_balance_doc(), language="en"))[0]
    assert _entry(PdfReader(io.BytesIO(english)).trailer, "/Root")["/Lang"] == "en-GB"


def test_pdf_wide_table_goes_on_landscape_pages_without_shredding(out: Path) -> None:
    rows = [
        [str(601100 + i), LABEL] + [f"{(i + 1) * 12_345_678 + m:,}".replace(",", " ") for m in range(11)]
        for i in range(30)
    ]
    doc = {
        "title": "Achats mensuels",
        "blocks": [
            {"type": "paragraph", "text": "Le tableau suivant est trop large pour une page en portrait."},
            {"type": "heading", "text": "Détail par mois"},
            {"type": "table", "columns": ["Compte", "Libellé", *MONTHS], "rows": rows},
            {"type": "paragraph", "text": "Retour en portrait après le tableau."},
        ],
    }
    pdf = out / "mensuel.pdf"
    pdf.write_bytes(build_pdf(parse_document(doc))[0])
    render.keep_pages(pdf, "tables-pdf-landscape", pages=3)
    sizes = [(float(p.mediabox.width), float(p.mediabox.height)) for p in PdfReader(pdf).pages]
    texts = [_words(t) for t in render.pages_text(pdf)]
    table_pages = [n for n, t in enumerate(texts) if "601100" in t or "601129" in t]
    assert table_pages and all(sizes[n][0] > sizes[n][1] for n in table_pages)  # landscape
    assert "Détail par mois" in texts[table_pages[0]]  # the heading went with its table
    assert sizes[0][0] < sizes[0][1] and sizes[-1][0] < sizes[-1][1]  # portrait before and after
    assert "Retour en portrait" in texts[-1]
    drawn = {_words(w.text) for page in render.words(pdf) for w in page.words}
    assert set(LABEL.split()) <= drawn and set(MONTHS) <= drawn
    lines = "\n".join(texts).splitlines()
    for row in rows:
        for amount in row[2:]:
            assert any(amount in line for line in lines), amount


def test_pdf_heading_never_ends_a_page_alone(out: Path) -> None:
    filler = "Le principe de prudence impose de comptabiliser toute perte probable. " * 9
    blocks: list[dict[str, object]] = []
    for n in range(1, 25):
        blocks.append({"type": "heading", "text": f"Section {n}", "level": 2})
        blocks.append({"type": "paragraph", "text": f"Début de la section {n}. {filler}"})
    pdf = out / "titres.pdf"
    pdf.write_bytes(build_pdf(parse_document({"title": "Notes annexes", "blocks": blocks}))[0])
    pages = [_words(t) for t in render.pages_text(pdf, layout=False)]
    assert len(pages) > 3
    for n in range(1, 25):
        where = [i for i, t in enumerate(pages) if re.search(rf"^Section {n}$", t, re.M)]
        assert len(where) == 1, n
        assert f"Début de la section {n}." in pages[where[0]], f"heading {n} alone at a page bottom"


def test_pdf_emoji_are_drawn_with_a_font_that_has_them_or_left_out(out: Path) -> None:
    assert f'<font name="{SYMBOLS_FONT}">✅</font>' in markup("Validé ✅")
    assert markup("Bravo 👍🏽 !") == f'Bravo <font name="{SYMBOLS_FONT}">👍</font>\u00a0!'  # tone dropped
    assert markup("Nouveau 🫨 visage") == "Nouveau  visage"  # in no font: left out, not a box
    doc = {
        "title": "Résultats 📊",
        "blocks": ["Objectif atteint ✅ 🚀", {"type": "bullets", "items": ["Bravo 🎉"]}],
    }
    pdf = out / "emoji.pdf"
    pdf.write_bytes(build_pdf(parse_document(doc))[0])
    render.keep_pages(pdf, "tables-pdf-emoji", pages=1, dpi=100)
    assert any("Symbola" in f for f in _fonts(pdf)), _fonts(pdf)
    shown = _words(render.text(pdf))
    assert "Objectif atteint ✅ 🚀" in shown and "Résultats 📊" in shown  # copied or searched as written


# --- XLSX through LibreOffice ---------------------------------------------------------------------

LEDGER = [
    ["2154", "Matériel industriel", "120 000 000", "(92 700 000)", "12 %"],
    ["2181", "Matériel de bureau", "8 500 000", "− 2 125 000", "15 000"],
    ["", "Sous-total immobilisations", "128 500 000", "(94 825 000)", "—"],
    ["4452", "État, TVA récupérable", "3 600 000", "0", "1 200"],
    ["5210", "Banque", "45 250 000", "−1 250 000", "2 565 600 000"],
    ["", "Sous-total trésorerie et créances", "48 850 000", "(1 250 000)", ""],
]
WIDE = [[f"Poste {i}"] + [(i + 1) * 1_000_000 + m for m in range(13)] for i in range(6)]


@dataclass(frozen=True)
class Workbook:
    source: Path
    computed: Path  # the workbook as LibreOffice saved it, formulas computed
    pdf: Path


@pytest.fixture(scope="module")
def workbook(out: Path) -> Workbook:
    sheets = parse_workbook(
        {
            "sheets": [
                {
                    "name": "Bilan",
                    "columns": ["Compte", "Libellé", "Brut (FCFA)", "Amortissements", "Contrôle"],
                    "rows": LEDGER,
                    "totals": True,
                },
                {"name": "Mensuel", "columns": ["Poste", *MONTHS, "Déc.", "Année"], "rows": WIDE},
            ]
        }
    )
    source = out / "bilan.xlsx"
    source.write_bytes(build_xlsx("Bilan 2024", sheets))
    pdf = render.to_pdf(source, out / "xlsx-pdf")
    render.keep_pages(pdf, "tables-xlsx", pages=3)
    return Workbook(source, render.convert(source, "xlsx", out / "computed"), pdf)


def test_xlsx_totals_computed_by_libreoffice_are_right(workbook: Workbook) -> None:
    ws = openpyxl.load_workbook(workbook.computed, data_only=True)["Bilan"]
    rows = list(ws.iter_rows(values_only=True))
    assert rows[1][:4] == ("2154", "Matériel industriel", 120_000_000, -92_700_000)
    assert rows[2][3] == -2_125_000 and rows[5][3] == -1_250_000  # « − » and parentheses are numbers
    total = rows[7]
    assert total[0] == "Total"  # the account codes are text, not summed
    # Subtotal rows are not added a second time.
    assert total[2] == 120_000_000 + 8_500_000 + 3_600_000 + 45_250_000
    assert total[3] == -92_700_000 - 2_125_000 - 1_250_000
    assert total[4] == pytest.approx(0.12 + 15_000 + 1_200 + 2_565_600_000)


def test_xlsx_one_percentage_does_not_make_a_column_percent(workbook: Workbook) -> None:
    ws = openpyxl.load_workbook(workbook.source)["Bilan"]
    assert ws["E2"].number_format == "0.0%" and ws["E2"].value == pytest.approx(0.12)
    assert ws["E6"].value == 2_565_600_000 and "%" not in ws["E6"].number_format
    shown = _words(render.text(workbook.pdf, first=1, last=1))
    assert "2565600000.0%" not in shown.replace(",", "").replace(" ", "")
    assert "12.0%" in shown or "12,0 %" in shown


def test_xlsx_prints_on_a4_fit_to_width_with_one_font(workbook: Workbook) -> None:
    wb = openpyxl.load_workbook(workbook.source)
    assert wb.properties.language == "fr-FR"
    for ws in wb.worksheets:
        assert ws.page_setup.paperSize == 9 and ws.page_setup.fitToWidth == 1
        assert ws.page_setup.fitToHeight == 0 and ws.sheet_properties.pageSetUpPr.fitToPage
        assert ws.print_title_rows == "$1:$1"
    bilan, wide = wb["Bilan"], wb["Mensuel"]
    assert bilan.page_setup.orientation == "portrait" and wide.page_setup.orientation == "landscape"
    assert bilan["A1"].font.name == bilan["A8"].font.name == "Calibri"
    sizes = [(float(p.mediabox.width), float(p.mediabox.height)) for p in PdfReader(workbook.pdf).pages]
    assert len(sizes) == 2  # one page per sheet: fit to width, not split over two pages
    assert all(sorted(round(x) for x in s) == [595, 842] for s in sizes)  # A4
    assert sizes[0][0] < sizes[0][1] and sizes[1][0] > sizes[1][1]  # portrait, then landscape
    families = {f.split("+")[-1].split("-")[0].split(",")[0] for f in _fonts(workbook.pdf)}
    assert len(families) == 1, families  # header and total rows in the body's font


# --- DOCX through LibreOffice ---------------------------------------------------------------------


def test_docx_table_columns_fit_their_content_and_amounts_are_right_aligned(out: Path) -> None:
    source = out / "bilan.docx"
    source.write_bytes(build_docx(parse_document(_balance_doc())))
    pdf = render.to_pdf(source, out / "docx-pdf")
    render.keep_pages(pdf, "tables-docx", pages=1)
    pages = render.words(pdf)
    edges = _x1_by_column(pages, BALANCE)
    for col, xs in edges.items():
        assert max(xs) - min(xs) < 1.5, (HEADER[col], xs)
    lines = _words(render.text(pdf)).splitlines()
    for row in BALANCE:
        for col in AMOUNT_COLUMNS:
            assert any(_words(row[col]) in line for line in lines), row[col]
    # Columns are as wide as their content: the reference column is narrow, the label one wide.
    labels = [w for w in pages[0].words if w.text in ("AD", "Immobilisations")]
    assert len(labels) == 2 and labels[1].x0 - labels[0].x0 < 60


def test_pdf_nested_lists_and_quotes_are_set_apart(out: Path) -> None:
    markdown = (
        "Avant la citation.\n\n> Le bilan est une photographie du patrimoine.\n\n"
        "1. Actif\n   - Immobilisations\n   - Stocks\n2. Passif\n"
    )
    pdf = out / "listes.pdf"
    pdf.write_bytes(build_pdf(parse_document({"title": "Leçon", "markdown": markdown}))[0])
    drawn = {w.text: w for page in render.words(pdf) for w in page.words}
    assert drawn["Le"].x0 > drawn["Avant"].x0 + 10  # the quotation is indented
    assert drawn["Immobilisations"].x0 > drawn["Actif"].x0 + 10  # a nested item, further in
    assert abs(drawn["Stocks"].x0 - drawn["Immobilisations"].x0) < 1
    assert abs(drawn["Passif"].x0 - drawn["Actif"].x0) < 1
    assert "2." in drawn and "1." in drawn  # numbered on its own level
