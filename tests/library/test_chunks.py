"""A file's text cut into chunks on its pages, sheets, slides and paragraphs, and the keyword text
both databases index (no database here)."""

from __future__ import annotations

import pytest

from bot import library
from bot.documents.convert import parse_document
from bot.documents.docx import build_docx
from bot.documents.extract import extract_text
from bot.documents.names import MIME_BY_EXT
from bot.documents.pdf import build_pdf
from bot.documents.pptx import build_pptx, parse_slides
from bot.documents.xlsx import build_xlsx, parse_workbook
from bot.library.chunks import MAX_WORDS, MIN_WORDS, pdf_pages


def words(n: int, word: str = "mot") -> str:
    return " ".join(f"{word}{i}" for i in range(n))


def test_text_is_cut_on_paragraphs_into_200_to_400_words() -> None:
    paragraphs = [words(70, f"p{k}x") for k in range(15)]  # 1,050 words in paragraphs of 70
    chunks = library.chunk_file("\n\n".join(paragraphs), "cours.txt", "text/plain")
    sizes = [len(c.text.split()) for c in chunks]
    assert all(MIN_WORDS <= s <= MAX_WORDS for s in sizes[:-1]) and sizes[-1] <= MAX_WORDS
    assert " ".join(c.text for c in chunks).split() == " ".join(paragraphs).split()  # nothing lost
    assert all(c.text.split()[0].endswith("x0") for c in chunks)  # each starts a paragraph
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert [c.locator for c in chunks] == [f"partie {n}" for n in range(1, len(chunks) + 1)]
    # One paragraph longer than a chunk is cut at its sentences, then its words.
    long = library.chunk_file(words(900), "transcription.txt", "text/plain")
    assert [len(c.text.split()) for c in long] == [400, 400, 100]
    # A file without text is one empty chunk: found by its name.
    assert library.chunk_file(None, "IMG_0001.jpg", "image/jpeg") == [library.Chunk(0, "", "")]
    assert library.chunk_file("Un demi plus un quart.", "photo.jpg", "image/jpeg")[0].locator == ""


def test_words_broken_at_line_ends_are_whole_and_ocr_noise_lines_are_dropped() -> None:
    read = ("La Côte d'Ivoire accède à l'indépen-\ndance en 1960. Félix Houphouët-\n"
            "Boigny devient président.\n"
            "| ~ = — .\n"
            "ll ~~ | =\n"
            "Exemple : 1/4 + 1/6 = 5/12.\n"
            "i\n"
            "Total : 3 450 000 FCFA")
    [chunk] = library.chunk_file(read, "photo.jpg", "image/jpeg")
    assert chunk.text == ("La Côte d'Ivoire accède à l'indépendance en 1960. Félix Houphouët-Boigny devient "
                          "président.\nExemple : 1/4 + 1/6 = 5/12.\nTotal : 3 450 000 FCFA")
    # A typed document keeps every line; only its broken words are joined.
    [typed] = library.chunk_file("Un mot coupé en fin de li-\ngne.\n| ~ =", "cours.txt", "text/plain")
    assert typed.text == "Un mot coupé en fin de ligne.\n| ~ ="
    compounds = "bien-être et peut-être"
    assert library.chunk_file(compounds, "a.txt", "text/plain")[0].text == compounds


def test_office_files_keep_their_sheets_slides_and_pages() -> None:
    sheets = parse_workbook({"sheets": [
        {"name": "Bilan", "columns": ["Poste", "Montant"], "rows": [["Immobilisations", 1200000]]},
        {"name": "Compte de résultat", "columns": ["Poste", "Montant"], "rows": [["Ventes", 900000]]},
    ]})
    xlsx = build_xlsx("Comptes", sheets)
    text = extract_text(xlsx, "comptes.xlsx", MIME_BY_EXT[".xlsx"])
    chunks = library.chunk_file(text, "comptes.xlsx", MIME_BY_EXT[".xlsx"])
    assert [c.locator for c in chunks] == ["feuille Bilan", "feuille Compte de résultat"]
    assert "Immobilisations" in chunks[0].text and "Ventes" in chunks[1].text

    pptx = build_pptx("Réunion", "", parse_slides({"slides": [
        {"title": "Calendrier", "bullets": ["Examens blancs en février"]},
        {"title": "Kermesse", "bullets": ["Stands des parents"]}]}))
    mime = MIME_BY_EXT[".pptx"]
    slides = library.chunk_file(extract_text(pptx, "r.pptx", mime), "r.pptx", mime)
    located = {c.locator: c.text for c in slides}
    assert "Examens blancs" in located["diapositive 2"] and "Stands des parents" in located["diapositive 3"]

    blocks = [f"Paragraphe {i} : la photosynthèse transforme la lumière en énergie." for i in range(90)]
    pdf, pages = build_pdf(parse_document({"title": "Cours de SVT", "blocks": blocks}))
    assert pages >= 2
    read = pdf_pages(pdf)
    text = extract_text(pdf, "svt.pdf", "application/pdf")
    chunks = library.chunk_file(text, "svt.pdf", "application/pdf", read)
    assert {c.locator.split(" (")[0] for c in chunks} == {f"page {n}" for n in range(1, pages + 1)}
    last = [c for c in chunks if c.locator.startswith(f"page {pages}")][-1]
    assert "Paragraphe 89" in last.text

    docx = build_docx(parse_document({"title": "Contrat", "blocks": ["On livre des tables-bancs."]}))
    text = extract_text(docx, "contrat.docx", MIME_BY_EXT[".docx"])
    assert "tables-bancs" in library.chunk_file(text, "contrat.docx", MIME_BY_EXT[".docx"])[0].text


def test_keyword_text_folds_accents_stems_french_and_drops_stop_words() -> None:
    assert library.keyword_terms("Les États financiers de l'entreprise") == \
        library.keyword_terms("etats financier entreprise")
    assert library.keyword_terms("des fractions") == library.keyword_terms("FRACTION") == ["fraction"]
    assert library.keyword_terms("Géographie de la Côte d'Ivoire") == ["geograph", "cot", "ivoir"]
    assert library.keyword_terms("le la les et du") == []
    assert library.keyword_terms("120 000 FCFA") == ["120", "000", "fcfa"]
    assert library.keyword_terms('x" OR NOT * NEAR( -- ; DROP_TABLE') == ["not", "near", "drop", "tabl"]


def test_snippet_marks_the_words_found_around_the_most_of_them() -> None:
    text = words(60) + " Le bilan présente l'actif et le passif à la clôture. " + words(60, "fin")
    snippet = library.snippet_of(text, library.keyword_terms("bilan passif"))
    assert "«bilan»" in snippet and "«passif»" in snippet
    assert snippet.startswith("…") and snippet.endswith("…")
    assert library.snippet_of("Court texte.", ["absent"]) == "Court texte."


def test_the_model_reads_a_query_in_the_case_its_words_have_in_a_text() -> None:
    # A capital that only starts the query, a title's or a shout's capitals: lowered; an acronym
    # and a name inside the query keep theirs. Keywords fold the case anyway.
    for asked in ("somme de quotients", "Somme de quotients", "SOMME DE QUOTIENTS", "Somme De Quotients"):
        assert library.meaning_query(asked) == "somme de quotients", asked
    assert library.meaning_query("Déclaration de TVA") == "déclaration de TVA"
    assert library.meaning_query("TVA Collectée") == "TVA collectée"
    assert library.meaning_query("impôt dû à l'État") == "impôt dû à l'État"
    assert library.meaning_query("« Photosynthèse »") == "« photosynthèse »"
    assert library.meaning_query("") == ""


def test_fusion_puts_every_word_first_and_lets_meaning_outweigh_one_shared_word() -> None:
    ranked = library.Ranked
    # (file, chunk, BM25 or cosine, share of the query's words or closeness to the best by meaning)
    keywords = [ranked(1, 10, 9.0, 1.0), ranked(3, 30, 2.0, 1 / 3), ranked(5, 50, 1.0, 0.5)]
    vectors = [ranked(2, 21, 0.86, 1.0), ranked(3, 31, 0.856, 0.9), ranked(1, 11, 0.83, 0.25)]
    fused = library.fuse(keywords, vectors)
    # 1: every word (1.5) + 0.25; 2: the best by meaning (1.0); 3: 0.9 + 1.5 / 27; 5: 1.5 / 8.
    assert [r.file_id for r in fused] == [1, 2, 3, 5]
    assert [r.score for r in fused] == pytest.approx([1.75, 1.0, 0.9 + 1.5 / 27, 1.5 / 8])
    # Each file keeps the chunk of the side that gave it the most.
    assert [r.chunk_id for r in fused] == [10, 21, 31, 50]
    assert library.fuse(keywords, []) == keywords  # keywords alone: their BM25 order
