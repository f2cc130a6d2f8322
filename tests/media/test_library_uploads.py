"""Files people send, in their library at once: a photo's text read as it arrives (OCR), searchable
by meaning right after, named as people name it; a scanned PDF read page by page; a search with no
good match says so plainly. Real Tesseract and the real multilingual-e5-small model, through the
webhook with the Twilio stand-in serving the media."""

from __future__ import annotations

import io
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from PIL import Image
from sqlalchemy import select

from bench.search.photos import photograph
from bot.storage.models import LibraryChunk, UserFile
from tests.support.harness import Harness

PHONE = "+2250700000011"
MakeHarness = Callable[..., Awaitable[Harness]]

LESSON_TITLE = "La photosynthèse"
LESSON = ("Leçon de sciences. Les plantes vertes fabriquent leur propre nourriture grâce à la lumière. "
          "Les feuilles captent le gaz carbonique de l'air et l'eau puisée par les racines. La "
          "chlorophylle transforme cette énergie lumineuse en sucre et la plante rejette de l'oxygène.")
PARAPHRASE = "comment les végétaux se nourrissent du soleil"


def _tool_results(h: Harness, name: str) -> list[dict[str, Any]]:
    """What the tool `name` answered, from the requests the model received after calling it."""
    out: list[dict[str, Any]] = []
    for request in h.llm.requests:
        calls = {c["id"]: c["function"]["name"] for m in request["messages"] if m["role"] == "assistant"
                 for c in m.get("tool_calls") or []}
        for m in request["messages"]:
            if m["role"] == "tool" and calls.get(m.get("tool_call_id")) == name:
                content = m["content"]
                start = content.index("{")
                found = json.loads(content[start:content.rindex("}") + 1])
                if found not in out:
                    out.append(found)
    return out


async def _search(h: Harness, query: str) -> dict[str, Any]:
    before = len(_tool_results(h, "search_user_files"))
    h.llm.push_tool_calls(("search_user_files", {"query": query}))
    h.llm.push_text("Voici ce que j'ai trouvé.")
    await h.inbound(PHONE, f"Cherche dans mes fichiers : {query}")
    await h.settle()
    results = _tool_results(h, "search_user_files")
    assert len(results) == before + 1, results
    return results[-1]


async def _files(h: Harness) -> list[UserFile]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(UserFile).order_by(UserFile.id))).all())


@pytest.mark.parametrize("vision", ["on", "off"])
async def test_a_photographed_lesson_is_found_by_a_paraphrase_right_after_its_upload(
    media_harness: MakeHarness, vision: str
) -> None:
    h = await media_harness(LLM_VISION=vision, EMBEDDINGS="local")
    await h.make_user(PHONE)
    h.llm.push_text("Belle leçon ! Que veux-tu revoir ?")
    await h.inbound(PHONE, "", media=[(photograph(LESSON_TITLE, LESSON, seed=3), "image/jpeg")])
    await h.settle()

    [photo] = await _files(h)
    assert photo.name == "La photosynthèse.jpg"  # its first line, not « image-….jpg »
    assert "chlorophylle" in (photo.text or "")
    async with h.services.sessions() as db:
        chunks = (await db.scalars(select(LibraryChunk).where(LibraryChunk.file_id == photo.id))).all()
    assert chunks and all(c.embedding is not None for c in chunks)  # embedded with the message, no pass

    found = await _search(h, PARAPHRASE)
    assert [r["file_id"] for r in found["results"]][:1] == [photo.id], found
    assert found["results"][0]["name"] == "La photosynthèse.jpg"

    nothing = await _search(h, "le championnat de football des cadets")
    assert nothing["results"] == [] and nothing["message"] == "aucun fichier ne correspond"
    # A word of its name alone finds nothing: « photosynthèse » is in the name, not in the text read.
    named_only = await _search(h, "jpg")
    assert named_only["results"] == []


def _scanned_pdf(pages: list[tuple[str, str]]) -> bytes:
    """An image-only PDF (no text layer), one photographed page each."""
    images = [Image.open(io.BytesIO(photograph(title, text, seed=n))).convert("RGB")
              for n, (title, text) in enumerate(pages)]
    out = io.BytesIO()
    images[0].save(out, "PDF", save_all=True, append_images=images[1:], resolution=150)
    return out.getvalue()


async def test_a_scanned_pdf_is_read_page_by_page_and_found(media_harness: MakeHarness) -> None:
    h = await media_harness(EMBEDDINGS="local")
    await h.make_user(PHONE)
    pdf = _scanned_pdf([("Facture Sotra Matériaux", "Ciment 50 sacs, fer à béton, livraison à Yopougon. "
                         "Total à payer 450 000 FCFA."),
                        ("Conditions de paiement", "Le règlement se fait par virement sous trente jours. "
                         "Un retard entraîne des pénalités.")])
    h.llm.push_text("J'ai bien reçu ta facture.")
    await h.inbound(PHONE, "", media=[(pdf, "application/pdf")])
    await h.settle(timeout_s=120)  # two pages rasterised and read on a busy machine

    [scan] = await _files(h)
    assert "Ciment" in (scan.text or "") and "virement" in (scan.text or "")
    assert scan.name == "Facture Sotra Matériaux.pdf"
    found = await _search(h, "délai pour régler la facture par transfert bancaire")
    assert [r["file_id"] for r in found["results"]][:1] == [scan.id]
    assert found["results"][0]["where"] == "page 2"


async def test_a_one_page_scan_is_found_by_the_text_read_on_it(media_harness: MakeHarness) -> None:
    # One page: no form feed in its text, and a text layer holding nothing.
    h = await media_harness(EMBEDDINGS="local")
    await h.make_user(PHONE)
    pdf = _scanned_pdf([("Facture Sotra Matériaux", "Ciment 50 sacs, fer à béton, livraison à Yopougon. "
                         "Total à payer 450 000 FCFA.")])
    h.llm.push_text("J'ai bien reçu ta facture.")
    await h.inbound(PHONE, "", media=[(pdf, "application/pdf")])
    await h.settle(timeout_s=120)

    [scan] = await _files(h)
    assert "Ciment" in (scan.text or "")
    found = await _search(h, "ciment livraison Yopougon")
    assert [r["file_id"] for r in found["results"]][:1] == [scan.id]
    assert "«Ciment»" in found["results"][0]["snippet"]


def _docx(heading: str, body: str) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading(heading, 1)
    document.add_paragraph(body)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


async def test_received_files_are_named_as_people_name_them(media_harness: MakeHarness) -> None:
    h = await media_harness(EMBEDDINGS="off")
    await h.make_user(PHONE)
    h.llm.default_text = "Reçu."
    await h.inbound(PHONE, "Leçon photosynthèse",
                    media=[(photograph("Chapitre 4", LESSON, seed=5), "image/jpeg")])
    await h.settle()
    invoice = _docx("Facture Sotra Matériaux", "Ciment et fer à béton livrés à Yopougon.")
    for _ in range(2):
        await h.inbound(PHONE, "", media=[(invoice, DOCX)])
        await h.settle()
    names = [f.name for f in await _files(h)]
    # The caption wins over the photo's first line; the same title twice stays two names.
    assert names == ["Leçon photosynthèse.jpg", "Facture Sotra Matériaux.docx",
                     "Facture Sotra Matériaux (2).docx"]

    h.llm.push_tool_calls(("list_user_files", {}))
    h.llm.push_text("Voici tes fichiers.")
    await h.inbound(PHONE, "Quels fichiers as-tu ?")
    await h.settle()
    [listed] = _tool_results(h, "list_user_files")
    newest, _, photo = listed["files"]
    assert newest["name"] == "Facture Sotra Matériaux (2).docx" and newest["kind"] == "word"
    assert newest["first_words"].startswith("Facture Sotra Matériaux Ciment")
    assert photo["kind"] == "photo" and photo["size"] > 0 and photo["created_at"]
    assert "chlorophylle" in photo["first_words"] or "sciences" in photo["first_words"]
