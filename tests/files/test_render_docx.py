"""Word documents and Markdown input as a person sees them: the DOCX rendered by LibreOffice to
PDF (page size, quotation and nested lists on the page), its language as Word reads it, and
the same Markdown kept in the other formats.

The first pages are kept as PNG in tests/support/render.OUTPUT_DIR (/tmp/deblo-render by default).
"""

from __future__ import annotations

import io
import itertools
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from docx import Document as DocxDocument

from bot.documents.content import ContentError, Document
from bot.documents.convert import parse_document
from bot.documents.docx import build_docx
from bot.documents.markdown import build_html, build_md
from tests.support import render

MARKDOWN = """# Leçon : les fractions

Une **fraction** représente une partie d'un tout.

> Diviser, c'est partager équitablement : chacun reçoit la même part.
> — Cours de mathématiques, 6ᵉ

## Méthode

- Comparer deux fractions
  - même dénominateur : comparer les numérateurs
    - le plus grand numérateur l'emporte
  - dénominateurs différents : réduire au même dénominateur
- Simplifier une fraction

Fin de la leçon.
"""


@dataclass(frozen=True)
class Rendered:
    doc: Document
    data: bytes
    pdf: Path
    pages: list[render.Page]


@pytest.fixture(scope="module")
def lesson(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    doc = parse_document({"title": "Leçon : les fractions", "markdown": MARKDOWN})
    data = build_docx(doc)
    pdf = render.render_bytes(data, "lecon.docx", tmp_path_factory.mktemp("docx"))
    kept = render.keep_pages(pdf, "docx", pages=2, dpi=80)
    print(f"rendered document kept in {kept[0].parent}")
    return Rendered(doc, data, pdf, render.words(pdf))


def _xml(data: bytes, member: str) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return zf.read(member).decode()


def _line_starting(page: render.Page, first: str, then: str) -> render.Word:
    """The word `first` on the line where the next word is `then`."""
    words = page.words
    for a, b in itertools.pairwise(words):
        if a.text == first and b.text == then and abs(a.y0 - b.y0) < 1:
            return a
    raise AssertionError(f"no line with {first!r} {then!r} in {[w.text for w in words][:80]}")


def test_docx_prints_on_a4(lesson: Rendered) -> None:
    info = render.info(lesson.pdf)
    assert info.width_mm == pytest.approx(210, abs=1) and info.height_mm == pytest.approx(297, abs=1)
    section = DocxDocument(io.BytesIO(lesson.data)).sections[0]
    sizes = (section.page_width, section.page_height, section.left_margin, section.top_margin)
    assert [round(s.mm) if s is not None else None for s in sizes] == [210, 297, 25, 25]


def test_docx_language_is_french_everywhere(lesson: Rendered) -> None:
    styles = _xml(lesson.data, "word/styles.xml")
    langs = re.findall(r'<w:lang [^>]*w:val="([^"]+)"', styles)
    assert langs and set(langs) == {"fr-FR"}
    assert re.search(r'<w:rPrDefault>.*?<w:lang [^>]*w:val="fr-FR"', styles, re.S)
    settings = _xml(lesson.data, "word/settings.xml")
    assert '<w:themeFontLang w:val="fr-FR"' in settings and '<w:decimalSymbol w:val=","' in settings
    assert "en-US" not in styles + settings
    assert DocxDocument(io.BytesIO(lesson.data)).core_properties.language == "fr-FR"


def test_english_documents_are_british_english() -> None:
    doc = parse_document({"title": "Lesson", "blocks": ["Colour and behaviour"]}, language="en")
    data = build_docx(doc)
    styles, settings = _xml(data, "word/styles.xml"), _xml(data, "word/settings.xml")
    assert set(re.findall(r'<w:lang [^>]*w:val="([^"]+)"', styles)) == {"en-GB"}
    assert '<w:themeFontLang w:val="en-GB"' in settings and '<w:decimalSymbol w:val="."' in settings


def test_blockquote_is_kept_and_set_apart(lesson: Rendered) -> None:
    quote = [b for b in lesson.doc.blocks if b.quote]
    assert [b.text for b in quote] == [
        "Diviser, c'est partager équitablement : chacun reçoit la même part. — Cours de mathématiques, 6ᵉ"
    ]
    paragraphs = DocxDocument(io.BytesIO(lesson.data)).paragraphs
    quoted_style = next(p for p in paragraphs if p.text.startswith("Diviser")).style
    assert quoted_style is not None and quoted_style.name == "Quote"
    page = lesson.pages[0]
    body = _line_starting(page, "Une", "fraction")
    quoted = _line_starting(page, "Diviser,", "c'est")
    assert quoted.x0 > body.x0 + 20  # drawn indented, as a quotation
    assert "partager équitablement" in render.text(lesson.pdf)


def test_nested_lists_keep_their_levels(lesson: Rendered) -> None:
    bullets = next(b for b in lesson.doc.blocks if b.type == "bullets")
    assert bullets.items[:3] == (
        "Comparer deux fractions",
        "même dénominateur : comparer les numérateurs",
        "le plus grand numérateur l'emporte",
    )
    assert bullets.levels == (0, 1, 2, 1, 0)
    styles = [
        p.style.name
        for p in DocxDocument(io.BytesIO(lesson.data)).paragraphs
        if p.style is not None and p.style.name.startswith("List")
    ]
    assert styles == ["List Bullet", "List Bullet 2", "List Bullet 3", "List Bullet 2", "List Bullet"]
    page = lesson.pages[0]
    top = _line_starting(page, "Comparer", "deux")
    second = _line_starting(page, "même", "dénominateur")
    third = _line_starting(page, "le", "plus")
    last = _line_starting(page, "Simplifier", "une")
    assert top.x0 < second.x0 < third.x0  # each level further in, on the rendered page
    assert last.x0 == pytest.approx(top.x0, abs=1)
    text = render.text(lesson.pdf)
    assert "réduire au même dénominateur" in text and "Fin de la leçon." in text


def test_markdown_and_html_keep_quotes_and_nesting(lesson: Rendered) -> None:
    md = build_md(lesson.doc)
    assert "> Diviser, c'est partager équitablement" in md
    assert "- Comparer deux fractions\n    - même dénominateur" in md
    assert "\n        - le plus grand numérateur l'emporte\n" in md
    again = parse_document({"title": "Leçon : les fractions", "markdown": md})
    assert again.blocks == lesson.doc.blocks  # what we write reads back the same
    page = build_html(lesson.doc)
    assert "<blockquote><p>Diviser, c&#x27;est partager" in page
    assert re.search(r"<li>Comparer deux fractions<ul><li>même dénominateur[^<]*<ul><li>le plus grand", page)


def test_pdf_keeps_quote_and_nested_items(tmp_path: Path) -> None:
    from bot.documents.pdf import build_pdf

    doc = parse_document({"title": "Leçon : les fractions", "markdown": MARKDOWN})
    pdf = tmp_path / "lecon.pdf"
    pdf.write_bytes(build_pdf(doc)[0])
    text = " ".join(render.text(pdf, layout=False).split())
    assert "partager équitablement" in text
    assert "le plus grand numérateur l'emporte" in text and "Simplifier une fraction" in text


def test_quote_and_levels_given_as_blocks() -> None:
    doc = parse_document(
        {
            "title": "t",
            "blocks": [
                {"type": "quote", "text": "Cité"},
                {"type": "paragraph", "text": "Aussi", "quote": True},
                {"type": "bullets", "items": ["a", "b", "c"], "levels": [0, 3, 1]},
                {"type": "bullets", "items": ["x", "y"], "levels": [0]},
            ],
        }
    )
    assert [(b.type, b.quote) for b in doc.blocks[:2]] == [("paragraph", True), ("paragraph", True)]
    assert doc.blocks[2].levels == (0, 1, 1)  # never deeper than one below the item before
    assert doc.blocks[3].levels == () and doc.blocks[3].item_levels() == (0, 0)


@pytest.mark.parametrize("levels", ["1,2", [0, "1"], [0, True], {"a": 1}])
def test_bad_levels_say_what_to_give(levels: object) -> None:
    with pytest.raises(ContentError, match=r"blocks\[0\]\.levels must be a list of integers"):
        parse_document({"title": "t", "blocks": [{"type": "bullets", "items": ["a", "b"], "levels": levels}]})


def test_extracted_text_has_plain_spaces_for_search() -> None:
    from bot.documents.extract import extract_text

    doc = parse_document({"title": "Devis", "blocks": ["Tables-bancs : 45\u202f000\u00a0FCFA"]})
    text = extract_text(build_docx(doc), "devis.docx", "") or ""
    assert "Tables-bancs : 45 000 FCFA" in text and "\u202f" not in text and "\u00a0" not in text


def test_a_word_file_read_back_keeps_quotes_and_levels(lesson: Rendered) -> None:
    from bot.documents.convert import to_document

    assert to_document(lesson.data, "lecon.docx", "").blocks == lesson.doc.blocks
