"""Each generator with French text, at and past its bounds, with hostile input; each file is
opened again with its own library to check what it holds."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import datetime
from html.parser import HTMLParser
from typing import Any

import openpyxl
import pytest
from docx import Document as DocxDocument
from pptx import Presentation
from pypdf import PdfReader
from pypdf.generic import DictionaryObject

from bot.documents.content import MAX_TABLE_ROWS, ContentError, column_types, language_tag
from bot.documents.convert import parse_document
from bot.documents.docx import build_docx
from bot.documents.markdown import build_html, build_md, sanitize_html
from bot.documents.names import safe_filename
from bot.documents.pdf import build_pdf, register_fonts
from bot.documents.pptx import MAX_SLIDES, build_pptx, parse_slides
from bot.documents.xlsx import MAX_ROWS, build_xlsx, parse_number, parse_workbook

# One backend: the database only holds the file; the document does not depend on it.
pytestmark = pytest.mark.one_backend

FRENCH = "Élève, école, ça, cœur, « guillemets », 1 250 000 FCFA, 12 € — déjà là"


def lesson(**extra: object) -> dict[str, object]:
    return {
        "title": "Résumé : les fractions",
        "subtitle": "Classe de 6ᵉ — Abidjan",
        "blocks": [
            {"type": "heading", "text": "Définition", "level": 1},
            {"type": "paragraph", "text": f"Une **fraction** représente une *partie* d'un tout. {FRENCH}"},
            {"type": "bullets", "items": ["Le numérateur est en haut", "Le dénominateur est en bas"]},
            {"type": "bullets", "ordered": True, "items": ["Réduire", "Comparer"]},
            {
                "type": "table",
                "columns": ["Fraction", "Décimal", "Pourcentage"],
                "rows": [["1/2", 0.5, "50 %"], ["3/4", 0.75, "75 %"]],
            },
        ],
        **extra,
    }


# --- PDF ------------------------------------------------------------------------------------------


def test_pdf_french_text_reads_back_with_an_embedded_truetype_font() -> None:
    data, pages = build_pdf(parse_document(lesson()))
    reader = PdfReader(io.BytesIO(data))
    assert pages == len(reader.pages) == 1
    text = reader.pages[0].extract_text()
    for word in (
        "Résumé : les fractions",
        "Élève, école, ça, cœur",
        "« guillemets »",
        "1 250 000 FCFA",
        "12 €",
        "numérateur",
        "Décimal",
        "Pourcentage",
        "Réduire",
    ):
        assert word in text
    assert "**" not in text  # emphasis became bold, not asterisks
    fonts = set()
    for page in reader.pages:
        resources = page["/Resources"]
        assert isinstance(resources, DictionaryObject)
        page_fonts = resources["/Font"]
        assert isinstance(page_fonts, DictionaryObject)
        for font in page_fonts.values():
            fonts.add(str(font.get_object()["/BaseFont"]))
    assert any("DejaVuSans" in f for f in fonts), fonts
    assert register_fonts() == "DejaVuSans"


def test_pdf_long_table_repeats_its_header_and_numbers_pages() -> None:
    rows = [[str(i), f"Écriture n°{i}", f"{i * 1000} FCFA"] for i in range(400)]
    doc = parse_document(
        {
            "title": "Grand livre",
            "blocks": [{"type": "table", "columns": ["N°", "Libellé", "Montant"], "rows": rows}],
        }
    )
    data, pages = build_pdf(doc)
    reader = PdfReader(io.BytesIO(data))
    assert pages == len(reader.pages) > 3
    for number, page in enumerate(reader.pages, start=1):
        text = page.extract_text()
        assert "N°" in text and "Libellé" in text and "Montant" in text
        assert f"{number} / {pages}" in text
    assert "Écriture n°399" in reader.pages[-1].extract_text()


def test_pdf_over_the_page_bound_is_an_error_saying_what_to_reduce() -> None:
    paragraphs = [{"type": "paragraph", "text": FRENCH * 20} for _ in range(30)]
    doc = parse_document({"title": "Trop long", "blocks": paragraphs})
    data, pages = build_pdf(doc, max_pages=100)
    assert 5 < pages < 100 and data.startswith(b"%PDF")
    build_pdf(doc, max_pages=pages)  # exactly at the bound is fine
    with pytest.raises(ContentError, match=f"more than {pages - 1} pages: shorten"):
        build_pdf(doc, max_pages=pages - 1)


def test_pdf_markup_in_text_is_shown_not_interpreted() -> None:
    doc = parse_document(
        {"title": "<font size=90>x</font>", "blocks": ["a < b & c > d <br/> <img src='x'/>"]}
    )
    text = PdfReader(io.BytesIO(build_pdf(doc)[0])).pages[0].extract_text()
    assert "<font size=90>x</font>" in text
    assert "a < b & c > d <br/> <img src='x'/>" in text


# --- content bounds ---------------------------------------------------------------------------------


def test_document_bounds_say_what_to_reduce() -> None:
    too_many_rows = [["x"]] * (MAX_TABLE_ROWS + 1)
    with pytest.raises(ContentError, match=r"rows, at most 5000: summarise or split"):
        parse_document({"title": "t", "blocks": [{"type": "table", "columns": ["a"], "rows": too_many_rows}]})
    parse_document(
        {"title": "t", "blocks": [{"type": "table", "columns": ["a"], "rows": too_many_rows[:-1]}]}
    )
    with pytest.raises(ContentError, match="type must be one of"):
        parse_document({"title": "t", "blocks": [{"type": "video"}]})
    with pytest.raises(ContentError, match="blocks must be a list"):
        parse_document({"title": "t", "blocks": "texte"})


# --- XLSX -------------------------------------------------------------------------------------------


def balance_sheet(rows: int = 3) -> dict[str, object]:
    return {
        "sheets": [
            {
                "name": "Écritures / mars",
                "columns": [
                    {"header": "Date", "type": "date"},
                    {"header": "Libellé"},
                    {"header": "Montant", "type": "fcfa"},
                    {"header": "TVA", "type": "percent"},
                    {"header": "Quantité", "type": "integer"},
                ],
                "rows": [
                    [
                        f"{(i % 28) + 1:02d}/03/2024",
                        f"Achat fournitures n°{i} — école",
                        "1 250 000",
                        "18 %",
                        i,
                    ]
                    for i in range(rows)
                ],
                "totals": True,
            },
            {
                "name": "Synthèse",
                "columns": ["Poste", "Valeur"],
                "rows": [["Total achats", "='Écritures   mars'!C5"], ["Marge", 0.125]],
            },
        ]
    }


def test_xlsx_sheets_types_formats_header_and_formulas() -> None:
    data = build_xlsx("Bilan SYSCOHADA", parse_workbook(balance_sheet()))
    wb = openpyxl.load_workbook(io.BytesIO(data))
    assert wb.sheetnames == ["Écritures   mars", "Synthèse"]
    ws = wb["Écritures   mars"]
    assert ws.freeze_panes == "A2"
    assert ws.auto_filter.ref == "A1:E4"
    header = ws[1]
    assert [c.value for c in header] == ["Date", "Libellé", "Montant", "TVA", "Quantité"]
    assert all(c.font.b for c in header) and header[0].fill.fgColor.rgb.endswith("1F3A5F")
    date_cell, label, amount, vat, qty = ws[2]
    assert date_cell.value == datetime(2024, 3, 1) and date_cell.number_format == "DD/MM/YYYY"
    assert label.value == "Achat fournitures n°0 — école"
    assert (
        amount.value == 1250000 and isinstance(amount.value, int) and amount.number_format == '#,##0 "FCFA"'
    )
    assert vat.value == pytest.approx(0.18) and vat.number_format == "0.0%"
    assert qty.value == 0 and qty.number_format == "#,##0"
    total = [c.value for c in ws[5]]
    assert total[0] == "Total" and total[2] == "=SUM(C2:C4)" and total[4] == "=SUM(E2:E4)"
    assert wb.calculation.fullCalcOnLoad is True  # Excel computes formulas when the file opens
    widths = {col: ws.column_dimensions[col].width for col in "ABCE"}
    assert widths["B"] >= len("Achat fournitures n°0 — école") and widths["A"] < widths["B"]
    assert wb["Synthèse"]["B2"].value == "='Écritures   mars'!C5"
    # The file is a clean zip with the parts Excel expects.
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert {"xl/workbook.xml", "xl/styles.xml", "[Content_Types].xml"} <= set(names)


def test_xlsx_auto_typed_columns_keep_numbers_as_numbers() -> None:
    sheets = parse_workbook(
        {
            "sheets": [
                {
                    "name": "Notes",
                    "columns": ["Élève", "Note", "Montant FCFA", "Tél"],
                    "rows": [["Awa", "15,5", "25 000", "0707070707"], ["Koffi", 12, "30 000", "0505050505"]],
                }
            ]
        }
    )
    ws = openpyxl.load_workbook(io.BytesIO(build_xlsx("Notes", sheets)))["Notes"]
    assert ws["B2"].value == 15.5 and ws["B2"].number_format == "#,##0.00"
    assert ws["C2"].value == 25000 and "FCFA" in ws["C2"].number_format
    assert ws["D2"].value == "0707070707"  # a phone number stays text


@pytest.mark.parametrize(
    ("raw", "number"),
    [
        ("1 250 000", 1250000),
        ("1\u202f250\u202f000 FCFA", 1250000),
        ("12,5", 12.5),
        ("1.250.000", 1250000),
        ("1,250,000.50", 1250000.5),
        ("-3 000", -3000),
        ("0,75", 0.75),
        ("abc", None),
        ("0707", None),
        ("(92 700 000)", -92700000),
        ("\u2212 3 000", -3000),
        ("\u22123\u00a0000 FCFA", -3000),
        ("(92 700 000) FCFA", -92700000),
        ("€ 12,50", 12.5),
        ("12,50 €", 12.5),
        ("**1 250 000**", 1250000),
        ("—", None),
        ("-0707", None),
    ],
)
def test_numbers_as_people_write_them(raw: str, number: float | None) -> None:
    assert parse_number(raw) == number


def test_xlsx_at_and_over_the_row_bound() -> None:
    rows = [[i, f"ligne {i}", i * 10] for i in range(MAX_ROWS)]
    data = build_xlsx(
        "Max", parse_workbook({"sheets": [{"name": "A", "columns": ["n", "t", "v"], "rows": rows}]})
    )
    ws = openpyxl.load_workbook(io.BytesIO(data), read_only=True)["A"]
    assert sum(1 for _ in ws.iter_rows()) == MAX_ROWS + 1
    with pytest.raises(ContentError, match="at most 10000 per sheet: summarise"):
        parse_workbook({"sheets": [{"name": "A", "rows": [["n", "t", "v"], *rows, [0, "x", 0]]}]})


@pytest.mark.parametrize("formula", ["=cmd|' /C calc'!A0", "=[1]Feuil1!A1", '=WEBSERVICE("http://x")'])
def test_xlsx_refuses_formulas_that_reach_outside(formula: str) -> None:
    with pytest.raises(ContentError, match="formulas may not"):
        build_xlsx("x", parse_workbook({"sheets": [{"name": "A", "rows": [["Formule"], [formula]]}]}))


# --- PPTX -------------------------------------------------------------------------------------------


def test_pptx_title_slide_bullets_notes_and_table() -> None:
    slides = parse_slides(
        {
            "slides": [
                {
                    "title": "Le bilan comptable",
                    "bullets": [
                        "L'**actif** : ce que possède l'entreprise",
                        "- immobilisations",
                        "Le passif « €, FCFA »",
                    ],
                    "notes": "Insister sur l'équilibre.",
                },
                {
                    "title": "Exemple chiffré",
                    "table": {"columns": ["Poste", "Montant"], "rows": [["Caisse", "50 000"]]},
                },
            ]
        }
    )
    prs = Presentation(io.BytesIO(build_pptx("Formation SYSCOHADA", "Abidjan — 2024", slides)))
    assert len(prs.slides) == 3
    first = prs.slides[0]
    assert first.shapes.title.text == "Formation SYSCOHADA"
    assert "Abidjan — 2024" in [s.text_frame.text for s in first.placeholders]
    body = next(s for s in prs.slides[1].placeholders if s.placeholder_format.idx == 1).text_frame
    assert [p.text for p in body.paragraphs] == [
        "L'actif : ce que possède l'entreprise",
        "immobilisations",
        "Le passif « €, FCFA »",
    ]
    assert [p.level for p in body.paragraphs] == [0, 1, 0]
    assert any(r.font.bold for r in body.paragraphs[0].runs)
    assert prs.slides[1].notes_slide.notes_text_frame.text == "Insister sur l'équilibre."
    table = next(s for s in prs.slides[2].shapes if s.has_table).table
    assert table.cell(1, 1).text == "50 000"


def test_pptx_at_and_over_the_slide_bound() -> None:
    many = [{"title": f"Diapo {i}", "bullets": ["un", "deux"]} for i in range(MAX_SLIDES)]
    prs = Presentation(io.BytesIO(build_pptx("t", "", parse_slides({"slides": many}))))
    assert len(prs.slides) == MAX_SLIDES + 1
    with pytest.raises(ContentError, match="at most 60: merge or drop"):
        parse_slides({"slides": [*many, {"title": "trop"}]})


# --- DOCX -------------------------------------------------------------------------------------------


def test_docx_headings_paragraphs_lists_tables() -> None:
    document = DocxDocument(io.BytesIO(build_docx(parse_document(lesson()))))
    paragraphs = [(p.style.name if p.style else None, p.text) for p in document.paragraphs if p.text]
    assert paragraphs[0] == ("Title", "Résumé : les fractions")
    assert ("Subtitle", "Classe de 6ᵉ — Abidjan") in paragraphs
    assert ("Heading 1", "Définition") in paragraphs
    assert ("List Bullet", "Le numérateur est en haut") in paragraphs
    assert ("List Number", "Comparer") in paragraphs
    body = next(p for p in document.paragraphs if p.text.startswith("Une fraction"))
    assert FRENCH in body.text and [r.text for r in body.runs if r.bold] == ["fraction"]
    table = document.tables[0]
    header = table.rows[0]._tr.trPr
    assert header is not None and header.xml.count("tblHeader") == 1  # header row repeats on each page
    assert [c.text for c in table.rows[0].cells] == ["Fraction", "Décimal", "Pourcentage"]
    assert [c.text for c in table.rows[2].cells] == ["3/4", "0.75", "75 %"]


# --- HTML and Markdown ------------------------------------------------------------------------------

HOSTILE = (
    '<p onclick="steal()">Bonjour <b>élève</b></p><script>alert(1)</script>'
    '<img src="http://tracker.example/p.gif" onerror="x()"><a href="javascript:alert(1)">clic</a>'
    '<a href="https://deblo.ai/cours">cours</a><style>body{background:url(http://evil/x)}</style>'
    '<iframe src="https://evil"></iframe><link rel="stylesheet" href="http://evil/s.css">'
    '<span style="background:url(http://evil/y)">s</span><svg onload="x()"></svg>'
    '<form action="http://evil"><input name=a></form><object data="http://evil/o"></object>'
)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_html_sanitises_what_the_model_writes() -> None:
    doc = parse_document(
        {
            "title": "Lettre <script>alert('t')</script>",
            "blocks": [{"type": "paragraph", "text": "<img src=x onerror=alert(1)> Ça marche"}],
        }
    )
    page = build_html(doc, HOSTILE)
    parser = _Tags()
    parser.feed(page)
    tags = {tag for tag, _attrs in parser.tags}
    assert not tags & {"script", "img", "iframe", "link", "object", "form", "input", "svg"}
    assert [t for t, _a in parser.tags].count("style") == 1  # ours, in <head>
    for _tag, attrs in parser.tags:
        assert not any(name.startswith("on") for name in attrs)
        assert "src" not in attrs and "style" not in attrs
        assert not (attrs.get("href") or "https:").startswith(("javascript:", "http:"))
    lowered = page.lower()
    assert "url(http" not in lowered and "tracker.example" not in lowered and "http://evil" not in lowered
    assert (
        "&lt;script&gt;alert" in page and "&lt;img src=x onerror=alert(1)&gt; Ça marche" in page
    )  # text, shown
    assert "<b>élève</b>" in page and 'href="https://deblo.ai/cours"' in page
    assert "default-src 'none'" in page  # nothing may load even if something slipped through
    assert sanitize_html("<p>ok</p>") == "<p>ok</p>"


def test_markdown_escapes_and_keeps_structure() -> None:
    doc = parse_document(
        lesson(
            blocks=[
                {"type": "heading", "text": "Partie # 1"},
                {"type": "paragraph", "text": "Un **mot** et <b>html</b>"},
                {"type": "table", "columns": ["a|b", "c"], "rows": [["1", "2"]]},
                {"type": "bullets", "items": ["é", "è"]},
            ]
        )
    )
    text = build_md(doc)
    assert text.startswith("# Résumé : les fractions\n")
    assert "## Partie \\# 1" in text
    assert "Un **mot** et \\<b\\>html\\</b\\>" in text
    assert "| a\\|b | c |" in text and "- é\n- è" in text


# --- names ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "ext", "name"),
    [
        ("../../etc/passwd", ".pdf", "passwd.pdf"),
        ("..\\..\\windows\\system32", ".docx", "system32.docx"),
        ("/etc/shadow", "", "shadow"),
        ("....", ".md", "document.md"),
        ("Bilan 2024: <actif>|passif?.xlsx", ".xlsx", "Bilan 2024 actif passif.xlsx"),
        ("rapport\x00\n.pdf", ".pdf", "rapport.pdf"),
        (".bashrc", ".md", "bashrc.md"),
        ("Résumé de l'élève", ".pdf", "Résumé de l'élève.pdf"),
    ],
)
def test_hostile_file_names_are_cleaned(raw: str, ext: str, name: str) -> None:
    assert safe_filename(raw, ext) == name


def test_very_long_names_are_cut_keeping_the_extension() -> None:
    assert safe_filename("é" * 500, ".pdf") == "é" * 96 + ".pdf"


def test_extraction_refuses_archives_that_inflate_too_much() -> None:
    import struct

    from bot.documents.extract import MAX_UNZIPPED_BYTES, extract_text

    real = build_docx(parse_document({"title": "Petit", "blocks": ["Bonjour"]}))
    assert "Bonjour" in (extract_text(real, "a.docx", "") or "")
    # Same file, but one member claims to inflate past the cap (as a zip bomb does).
    data = bytearray(real)
    at = data.find(b"PK\x01\x02")
    struct.pack_into("<I", data, at + 24, MAX_UNZIPPED_BYTES + 1)
    assert extract_text(bytes(data), "a.docx", "") is None
    assert extract_text(b"%PDF-1.4 garbage", "x.pdf", "application/pdf") is None
    assert extract_text(b"\x89PNG\r\n", "photo.png", "image/png") is None


def test_declared_types_are_checked() -> None:
    from bot.documents.names import mime_for

    assert mime_for("a.pdf", "application/pdf; charset=binary") == "application/pdf"
    assert mime_for("a.pdf", "application/octet-stream") == "application/pdf"
    assert mime_for("a.pdf", 'text/html"\r\nX-Evil: 1') == "application/pdf"
    assert mime_for("a.bin", "x" * 300) == "application/octet-stream"
    assert mime_for("photo", "image/jpeg") == "image/jpeg"


def test_markdown_instead_of_blocks() -> None:
    doc = parse_document(
        {
            "title": "Leçon",
            "markdown": (
                "# Leçon\n\nLes **fractions** simples.\n\n## Exemples\n\n- 1/2\n- 3/4\n\n"
                "| Fraction | Décimal |\n|---|---|\n| 1/2 | 0,5 |\n"
            ),
        }
    )
    kinds = [(b.type, b.text or b.items or b.columns) for b in doc.blocks]
    assert kinds == [
        ("paragraph", "Les **fractions** simples."),
        ("heading", "Exemples"),
        ("bullets", ("1/2", "3/4")),
        ("table", ("Fraction", "Décimal")),
    ]
    text = PdfReader(io.BytesIO(build_pdf(doc)[0])).pages[0].extract_text()
    assert "Les fractions simples." in text and "0,5" in text and text.count("Leçon") == 1
    with pytest.raises(ContentError, match="at most 400000"):
        parse_document({"title": "t", "markdown": "x" * 400_001})


# --- column types (shared by the PDF, Word and Excel tables) --------------------------------------


def test_column_types_are_decided_from_all_the_values() -> None:
    header = ["Compte", "Libellé", "Montant", "Variation", "Taux", "Année", "Écart"]
    rows = [
        ["4452", "État, TVA récupérable", "1 250 000", "(92 700 000)", "18 %", "2023", "12 %"],
        ["4011", "Fournisseurs", "3 000 000 FCFA", "\u2212 3 000", "5,5 %", "2024", "2 565 600 000"],
        ["5210", "Banque", "—", "**(1 000)**", "", "2024", "15 000"],
        ["", "**Total**", "**4 250 000**", "—", "n/a", "", "1 200"],
    ]
    assert column_types(header, rows) == [
        "text",  # account codes are never summed
        "text",
        "fcfa",  # a « — » and a bold total do not flip it; one « FCFA » names the unit
        "integer",
        "percent",
        "text",  # years
        "integer",  # one percentage among amounts does not make the column percent
    ]
    # Digits in the first column are item numbers; a column with a few notes stays numeric.
    assert column_types(["N°", "Prix"], [["101", "5 000"], ["102", "voir note"], ["103", "7 500"]]) == [
        "text",
        "integer",
    ]
    assert column_types([], [["a", "1,5"], ["b", "2"]]) == ["text", "number"]
    notes = [["a", "bien"], ["b", "12"], ["c", "passable"]]
    assert column_types(["Poste", "Note"], notes) == ["text", "text"]


def test_language_tags() -> None:
    assert [language_tag(x) for x in ("fr", "en", "EN-us", "", None, "wo")] == [
        "fr-FR", "en-GB", "en-GB", "fr-FR", "fr-FR", "fr-FR"
    ]
    assert parse_document({"title": "t"}, language="en").language == "en"


def test_xlsx_codes_negatives_subtotals_and_page_setup() -> None:
    rows = [
        ["2154", "Matériel", "120 000 000", "(92 700 000)"],
        ["2181", "Mobilier", "8 500 000", "\u2212 2 125 000"],
        ["", "Sous-total immobilisations", "128 500 000", "(94 825 000)"],
        ["5210", "Banque", "45 250 000", "—"],
    ]
    columns = ["Compte", "Libellé", "Brut", "Amort."]
    sheet = {"name": "Bilan", "columns": columns, "rows": rows, "totals": True}
    sheets = parse_workbook({"sheets": [sheet]})
    wb = openpyxl.load_workbook(io.BytesIO(build_xlsx("Bilan", sheets, language="en")))
    ws = wb["Bilan"]
    assert wb.properties.language == "en-GB"
    assert ws["A2"].value == "2154" and ws["A2"].data_type == "s"
    assert ws["D2"].value == -92700000 and ws["D3"].value == -2125000
    assert ws["D5"].value == "—" and ws["D5"].alignment.horizontal == "right"
    assert [c.value for c in ws[6]] == ["Total", None, "=SUM(C2:C3,C5)", "=SUM(D2:D3,D5)"]
    assert ws["A1"].font.name == ws["C6"].font.name == "Calibri" and ws["C6"].font.b
    setup = ws.page_setup
    assert (setup.paperSize, setup.orientation, setup.fitToWidth, setup.fitToHeight) == (9, "portrait", 1, 0)
    assert ws.sheet_properties.pageSetUpPr.fitToPage and ws.print_title_rows == "$1:$1"


def test_xlsx_wide_sheet_prints_landscape_and_a_sheet_without_header_has_its_rows() -> None:
    wide = {"name": "Large", "columns": [f"Colonne {i}" for i in range(14)], "rows": [[1_000_000] * 14]}
    bare = {"name": "Brut", "columns": [], "rows": [["a", 1], ["b", 2]]}  # the older form, no header
    wb = openpyxl.load_workbook(io.BytesIO(build_xlsx("x", parse_workbook({"sheets": [wide, bare]}))))
    assert wb["Large"].page_setup.orientation == "landscape"
    assert [[c.value for c in r] for r in wb["Brut"].iter_rows()] == [["a", 1], ["b", 2]]
    assert wb["Brut"].print_title_rows is None


def test_pdf_wide_table_is_laid_out_in_landscape_and_amounts_keep_their_width() -> None:
    from bot.documents.pdf import frame_widths, table_layout

    row = ["601100", "Achats de marchandises", *(["12 345 678"] * 11)]
    block = parse_document({"title": "t", "blocks": [{"type": "table", "rows": [row] * 3}]}).blocks[0]
    kinds = column_types(block.columns, block.rows)
    landscape, size, widths = table_layout(block, kinds, *frame_widths())
    assert landscape and size <= 9 and sum(widths) == pytest.approx(frame_widths()[1])
    from reportlab.pdfbase.pdfmetrics import stringWidth

    amount = stringWidth("12\u00a0345\u00a0678", "DocSans", size) + 12
    assert all(w >= amount for w in widths[2:])
    narrow = parse_document({"title": "t", "blocks": [{"type": "table", "rows": [["a", "1 000"]]}]}).blocks[0]
    assert table_layout(narrow, ["text", "integer"], *frame_widths())[0] is False


def test_docx_table_widths_follow_content_and_amounts_are_right_aligned() -> None:
    from docx.enum.text import WD_ALIGN_PARAGRAPH

    doc = parse_document(
        {
            "title": "Bilan",
            "blocks": [
                {
                    "type": "table",
                    "columns": ["Réf.", "Libellé", "Montant"],
                    "rows": [
                        ["AD", "Immobilisations incorporelles", "120 000 000"],
                        ["AZ", "**Total**", "**—**"],
                    ],
                }
            ],
        }
    )
    table = DocxDocument(io.BytesIO(build_docx(doc))).tables[0]
    widths = [c.width for c in table.columns]
    assert widths[0] < widths[2] < widths[1]
    for row in table.rows:
        assert row.cells[2].paragraphs[0].alignment == WD_ALIGN_PARAGRAPH.RIGHT
        assert row.cells[1].paragraphs[0].alignment is None


# --- the compact forms the tool schemas offer --------------------------------------------------------

LESSON_MD = (
    f"## Définition\n\nUne **fraction** représente une *partie* d'un tout. {FRENCH}\n\n"
    "- Le numérateur est en haut\n- Le dénominateur est en bas\n\n1. Réduire\n2. Comparer\n\n"
    "| Fraction | Décimal | Pourcentage |\n|---|---|---|\n| 1/2 | 0.5 | 50 % |\n| 3/4 | 0.75 | 75 % |\n"
)


def test_markdown_gives_the_same_document_as_blocks() -> None:
    from_blocks = parse_document(lesson())
    from_markdown = parse_document({**lesson(), "blocks": None, "markdown": LESSON_MD})
    assert from_markdown == from_blocks
    paged = parse_document({"title": "t", "markdown": "Page 1\n\n---\n\nPage 2"})
    assert [b.type for b in paged.blocks] == ["paragraph", "page_break", "paragraph"]


def test_markdown_tables_over_the_bounds_are_errors() -> None:
    wide = "| " + " | ".join(["c"] * 21) + " |\n"
    with pytest.raises(ContentError, match="21 columns, at most 20: drop or merge"):
        parse_document({"title": "t", "markdown": wide + "|---|\n"})
    long = "| a |\n|---|\n" + "| x |\n" * (MAX_TABLE_ROWS + 1)
    with pytest.raises(ContentError, match="5001 rows, at most 5000: summarise or split"):
        parse_document({"title": "t", "markdown": long})


DECK_MD = """# Le bilan comptable
- L'**actif** : ce que possède l'entreprise
  - immobilisations
- Le passif « €, FCFA »

Notes: Insister sur l'équilibre.

---

# Exemple chiffré

| Poste | Montant |
|---|---|
| Caisse | 50 000 |
"""


def test_slides_as_markdown_are_the_same_slides() -> None:
    old = {
        "slides": [
            {
                "title": "Le bilan comptable",
                "bullets": [
                    "L'**actif** : ce que possède l'entreprise",
                    "- immobilisations",
                    "Le passif « €, FCFA »",
                ],
                "notes": "Insister sur l'équilibre.",
            },
            {
                "title": "Exemple chiffré",
                "table": {"columns": ["Poste", "Montant"], "rows": [["Caisse", "50 000"]]},
            },
        ]
    }
    assert parse_slides({"markdown": DECK_MD}) == parse_slides(old)
    # Without ---, each "# " title starts a slide; numbered items keep their numbers.
    slides = parse_slides({"markdown": "# Un\n1. a\n2. b\n# Deux\nTexte"})
    assert [(s.title, s.bullets) for s in slides] == [
        ("Un", ((0, "1. a"), (0, "2. b"))),
        ("Deux", ((0, "Texte"),)),
    ]


def test_bad_slides_markdown_says_what_to_change() -> None:
    two_tables = "# T\n\n| a |\n|---|\n| 1 |\n\ntexte\n\n| b |\n|---|\n| 2 |\n"
    with pytest.raises(ContentError, match="slide 1 has two tables"):
        parse_slides({"markdown": two_tables})
    with pytest.raises(ContentError, match="give the slides as markdown"):
        parse_slides({"markdown": "  \n---\n "})
    with pytest.raises(ContentError, match="at most 60: merge or drop"):
        parse_slides({"markdown": "\n---\n".join(["# s"] * (MAX_SLIDES + 1))})


def test_sheet_rows_with_the_header_first_are_the_same_sheet() -> None:
    rows = [["Awa", "15,5"], ["Koffi", 12]]
    header_first = {"name": "Notes", "rows": [["Élève", "Note"], *rows], "totals": True}
    old = {"name": "Notes", "columns": ["Élève", "Note"], "rows": rows, "totals": True}
    sheets = parse_workbook({"sheets": [header_first]})
    assert sheets == parse_workbook({"sheets": [old]})
    ws = openpyxl.load_workbook(io.BytesIO(build_xlsx("Notes", sheets)))["Notes"]
    assert [c.value for c in ws[1]] == ["Élève", "Note"] and ws["B2"].value == 15.5
    with pytest.raises(ContentError, match="header row first"):
        parse_workbook({"sheets": [{"name": "A", "rows": ["Élève", "Note"]}]})


async def test_a_turn_fills_the_compact_forms_and_the_user_gets_the_files(harness: Any) -> None:
    """Through a real turn: the model is offered the compact schemas, writes a deck as Markdown and
    a sheet as rows, and both files are made and sent; the older slide list is refused by the schema
    with an error the model can act on."""
    h, phone = harness, "+2250733333333"
    await h.make_user(phone, mode="pro")
    sheet = {"name": "Budget", "rows": [["Poste", "Montant (FCFA)"], ["Fournitures", 125000]], "totals": True}
    # One call per model response: the files go out one after the other, as a user would see them.
    h.llm.push_tool_calls(("generate_pptx", {"title": "Formation SYSCOHADA", "markdown": DECK_MD}))
    h.llm.push_tool_calls(("generate_xlsx", {"title": "Budget", "sheets": [sheet]}))
    h.llm.push_tool_calls(("generate_pptx", {"title": "Ancien", "slides": [{"title": "s"}]}))
    h.llm.push_text("Voici la présentation et le budget.")
    await h.inbound(phone, "Fais-moi une présentation et un budget")
    await h.settle(timeout_s=30)
    offered = {t["function"]["name"]: t["function"]["parameters"] for t in h.llm.requests[0]["tools"]}
    pptx = offered["generate_pptx"]
    assert pptx["required"] == ["title", "markdown"] and "slides" not in pptx["properties"]
    results = [
        json.loads(m["content"]) for m in h.llm.requests[3]["messages"] if m["role"] == "tool"
    ]
    assert [r["success"] for r in results] == [True, True, False]
    assert results[0]["slides"] == 3 and results[1]["sheets"] == [{"name": "Budget", "rows": 1}]
    assert "markdown" in results[2]["error"] and "required" in results[2]["error"]
    assert results[0]["name"] == "Formation SYSCOHADA.pptx" and results[1]["name"] == "Budget.xlsx"
    assert all(r["delivered"] is True for r in results[:2]), results
