"""Slides as a person sees them: the deck rendered by LibreOffice to PDF, then its text boxes,
tables and page size checked on the rendered pages as well as in the file's geometry.

The first pages are kept as PNG in tests/support/render.OUTPUT_DIR (/tmp/deblo-render by default).
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from pptx import Presentation
from pptx.enum.text import PP_ALIGN
from pptx.util import Emu

from bot.documents.pptx import build_pptx, parse_slides
from tests.support import render

LONG = (
    "Le principe de prudence impose de comptabiliser toute perte probable dès qu'elle est connue, "
    "même si elle n'est pas encore réalisée à la date de clôture de l'exercice."
)
NAMES = "Kouassi Yao Bamba Traoré Koné Diallo Ouattara Coulibaly Touré Konaté Camara Sylla Cissé Keïta Sow"
ROWS = [
    [str(4111 + i), f"Client {name}", f"{(i + 1) * 1_250_000:,}".replace(",", "\u202f") + " FCFA"]
    for i, name in enumerate(NAMES.split())
]
HEADER = ["Compte", "Libellé", "Solde débiteur"]
TITLE = "Formation SYSCOHADA : les états financiers de fin d'exercice et leur présentation"

SLIDES = {
    "slides": [
        {
            "title": "Le bilan comptable",
            "bullets": ["L'**actif** : ce que possède l'entreprise", "- immobilisations", "Le passif"],
            "notes": "Insister sur l'équilibre.",
        },
        {"title": "Les principes comptables à connaître", "bullets": [LONG] * 12},
        {"title": "Balance des comptes clients", "table": {"columns": HEADER, "rows": ROWS}},
        {
            "title": "Résultat et trésorerie",
            "bullets": ["Produits moins charges", "Flux de l'exercice"],
            "table": {
                "columns": ["Poste", "Montant"],
                "rows": [["Produits", "12 500 000"], ["Charges", "(9 800 000)"], ["Résultat", "2 700 000"]],
            },
        },
        {
            "title": " ".join(["Un titre très long qui ne tient pas sur une seule ligne"] * 4),
            "bullets": ["Un"],
        },
    ]
}


@dataclass(frozen=True)
class Rendered:
    data: bytes
    pdf: Path
    pages: list[render.Page]


@pytest.fixture(scope="module")
def deck(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    data = build_pptx(TITLE, "Abidjan — 2024", parse_slides(SLIDES))
    pdf = render.render_bytes(data, "deck.pptx", tmp_path_factory.mktemp("slides"))
    kept = render.keep_pages(pdf, "slides", pages=12, dpi=60)
    print(f"rendered slides kept in {kept[0].parent}")
    return Rendered(data, pdf, render.words(pdf))


def _boxes(slide: object, scale: float) -> list[tuple[str, float, float, float, float]]:
    """(name, left, top, right, bottom) in points of every shape that shows text or a table."""
    out = []
    for shape in slide.shapes:  # type: ignore[attr-defined]
        if not (shape.has_text_frame and shape.text_frame.text.strip()) and not shape.has_table:
            continue
        for value in (shape.left, shape.top, shape.width, shape.height):
            assert value is not None and value > 0, f"{shape.name} has no geometry: {value}"
        left, top = shape.left * scale, shape.top * scale
        out.append((shape.name, left, top, left + shape.width * scale, top + shape.height * scale))
    return out


def test_slides_are_16_9_and_the_file_says_so(deck: Rendered) -> None:
    prs = Presentation(io.BytesIO(deck.data))
    assert prs.slide_width is not None and prs.slide_height is not None
    assert prs.slide_width * 9 == prs.slide_height * 16
    with zipfile.ZipFile(io.BytesIO(deck.data)) as zf:
        size = zf.read("ppt/presentation.xml").decode()
    assert 'type="screen4x3"' not in size and 'cx="12192000" cy="6858000"' in size
    info = render.info(deck.pdf)
    assert info.pages == len(prs.slides)
    assert info.width_pt == pytest.approx(960, abs=1) and info.height_pt == pytest.approx(540, abs=1)


def test_text_boxes_stay_on_the_slide_and_apart(deck: Rendered) -> None:
    prs = Presentation(io.BytesIO(deck.data))
    scale = 960 / prs.slide_width
    for number, slide in enumerate(prs.slides, start=1):
        boxes = _boxes(slide, scale)
        assert boxes, f"slide {number} shows nothing"
        for name, left, top, right, bottom in boxes:
            assert left >= 0 and top >= 0 and right <= 960 and bottom <= 540, f"slide {number}: {name} off"
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                apart = a[3] <= b[1] or b[3] <= a[1] or a[4] <= b[2] or b[4] <= a[2]
                assert apart, f"slide {number}: {a[0]} overlaps {b[0]}"


def test_rendered_text_is_drawn_inside_its_box(deck: Rendered) -> None:
    """What LibreOffice drew: every word on the page and inside the box that holds it, so no
    text runs out of its frame (over another one or off the slide)."""
    prs = Presentation(io.BytesIO(deck.data))
    scale = 960 / prs.slide_width
    assert len(deck.pages) == len(prs.slides)
    for slide, page in zip(prs.slides, deck.pages, strict=True):
        boxes = _boxes(slide, scale)
        assert page.words, f"slide {page.number} rendered no text"
        for w in page.words:
            assert 0 <= w.x0 and w.x1 <= page.width and 0 <= w.y0 and w.y1 <= page.height, w
            inside = [
                b
                for b in boxes
                if b[1] - 2 <= w.x0 and w.x1 <= b[3] + 2 and b[2] - 2 <= w.y0 and w.y1 <= b[4] + 2
            ]
            assert inside, f"slide {page.number}: {w.text!r} at {w} is outside every text box {boxes}"


def test_title_and_body_sit_at_the_layout_positions(deck: Rendered) -> None:
    prs = Presentation(io.BytesIO(deck.data))
    layout = prs.slide_layouts[1]
    slide = prs.slides[1]
    for idx in (0, 1):
        shape = next(p for p in slide.placeholders if p.placeholder_format.idx == idx)
        model = layout.placeholders.get(idx)  # the first with that idx
        assert model is not None
        assert (shape.left, shape.top, shape.width) == (model.left, model.top, model.width)
        assert shape.top > 0 and shape.height > Emu(0)
    title, body = slide.shapes.title, slide.placeholders[1]
    assert title.top + title.height <= body.top  # the body starts below the title
    # The rendered title is on the upper part of the slide, its body below it.
    words = {w.text: w for w in deck.pages[1].words}
    assert words["bilan"].y1 < words["possède"].y0 < 540


def test_text_that_does_not_fit_is_shrunk_or_continued(deck: Rendered) -> None:
    prs = Presentation(io.BytesIO(deck.data))
    titles = [s.shapes.title.text for s in prs.slides]
    parts = [n for n, t in enumerate(titles) if t.startswith("Les principes comptables")]
    assert len(parts) >= 2 and all(titles[n].endswith("(suite)") for n in parts[1:]), titles
    bodies = [prs.slides[n].placeholders[1].text_frame.paragraphs for n in parts]
    assert sum(len(b) for b in bodies) == 12  # every bullet once, none lost
    for n in parts:
        sizes = {r.font.size.pt for p in prs.slides[n].placeholders[1].text_frame.paragraphs for r in p.runs}
        assert sizes and max(sizes) < 28  # shrunk from the template's size
    rendered = " ".join(" ".join(w.text for w in deck.pages[n].words) for n in parts)
    assert rendered.count("réalisée") == 12
    long_title = next(s for s in prs.slides if s.shapes.title.text.startswith("Un titre très long"))
    assert long_title.shapes.title.text_frame.paragraphs[0].runs[0].font.size.pt < 40


def test_long_table_continues_with_its_header_repeated(deck: Rendered) -> None:
    prs = Presentation(io.BytesIO(deck.data))
    parts = [
        (n, next(sh for sh in s.shapes if sh.has_table).table)
        for n, s in enumerate(prs.slides)
        if s.shapes.title.text.startswith("Balance des comptes")
    ]
    assert len(parts) >= 2
    shown = []
    for n, table in parts:
        assert [c.text for c in table.rows[0].cells] == HEADER
        shown += [[c.text for c in row.cells] for row in list(table.rows)[1:]]
        page_text = " ".join(w.text for w in deck.pages[n].words)
        assert "Libellé" in page_text and "débiteur" in page_text  # header drawn on each slide
    assert shown == ROWS  # every row once, in order
    rendered = " ".join(w.text for n, _t in parts for w in deck.pages[n].words)
    assert all(row[1].split()[1] in rendered for row in ROWS)


def test_amounts_are_right_aligned_and_codes_left(deck: Rendered) -> None:
    prs = Presentation(io.BytesIO(deck.data))
    n, table = next(
        (n, next(sh for sh in s.shapes if sh.has_table).table)
        for n, s in enumerate(prs.slides)
        if s.shapes.title.text.startswith("Balance des comptes")
    )
    assert table.cell(1, 2).text_frame.paragraphs[0].alignment == PP_ALIGN.RIGHT
    assert table.cell(1, 0).text_frame.paragraphs[0].alignment != PP_ALIGN.RIGHT
    words = deck.pages[n].words
    fcfa = [w for w in words if w.text == "FCFA"]
    codes = [w for w in words if w.text.isdigit() and w.text.startswith("41")]
    assert len(fcfa) >= 5 and len(codes) >= 5
    assert max(w.x1 for w in fcfa) - min(w.x1 for w in fcfa) < 1.5  # amounts end on one edge
    assert max(w.x0 for w in codes) - min(w.x0 for w in codes) < 1.5  # codes start on one edge
    figures = [w for w in words if w.x1 < min(f.x0 for f in fcfa) and w.text.replace("\u202f", "").isdigit()]
    assert len({round(w.x0) for w in figures}) > 1  # the amounts are of different lengths


def test_bullets_and_a_small_table_share_a_slide(deck: Rendered) -> None:
    prs = Presentation(io.BytesIO(deck.data))
    slide = next(s for s in prs.slides if s.shapes.title.text == "Résultat et trésorerie")
    table = next(sh for sh in slide.shapes if sh.has_table)
    body = slide.placeholders[1]
    assert body.top + body.height <= table.top
    assert table.table.cell(2, 1).text == "(9 800 000)"


def test_slides_are_marked_french(deck: Rendered) -> None:
    prs = Presentation(io.BytesIO(deck.data))
    langs = {
        r.font._rPr.get("lang")
        for s in prs.slides
        for sh in s.shapes
        if sh.has_text_frame
        for p in sh.text_frame.paragraphs
        for r in p.runs
    }
    assert langs == {"fr-FR"}
    english = Presentation(io.BytesIO(build_pptx("Deck", "", parse_slides(SLIDES), lang="en")))
    assert english.slides[2].shapes.title.text_frame.paragraphs[0].runs[0].font._rPr.get("lang") == "en-GB"
    assert any(s.shapes.title.text.endswith("(continued)") for s in english.slides)


def test_a_missing_renderer_is_a_clear_failure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(render.RenderError, match=r"`soffice` is not installed.*apt-get install libreoffice"):
        render.to_pdf(tmp_path / "x.pptx")
    with pytest.raises(render.RenderError, match="poppler-utils"):
        render.info(tmp_path / "x.pdf")
    monkeypatch.undo()
    with pytest.raises(render.RenderError, match="no file to render"):
        render.to_pdf(tmp_path / "absent.pptx")
