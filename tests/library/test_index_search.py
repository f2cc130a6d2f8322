"""The library's index on a real database (SQLite and PostgreSQL): files indexed when stored,
embedded through the OpenAI-compatible stand-in, hybrid search that finds a paraphrase and names
the sheet, an embedding failure that loses nothing and is retried, and `library reindex`."""

from __future__ import annotations

import argparse
import io
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import pytest
from sqlalchemy import delete, func, select

from bot import console, library
from bot.documents.names import MIME_BY_EXT
from bot.documents.xlsx import build_xlsx, parse_workbook
from bot.services import Services
from bot.storage.models import LibraryChunk, User, UserFile
from tests.fakes.embeddings import FakeEmbeddings, vector
from tests.support.library import Library
from tools import by_name

MakeServices = Callable[..., Awaitable[Services]]
Users = Callable[..., Awaitable[list[User]]]


async def upload(services: Services, user: User, name: str, data: bytes, mime: str = "") -> UserFile:
    async with services.sessions() as db:
        row = await library.add_file(services, db, user_id=user.id, name=name, mime=mime, data=data,
                                     origin="upload")
        await db.commit()
    return row


def balance_sheet() -> bytes:
    return build_xlsx("Comptes", parse_workbook({"sheets": [
        {"name": "Notes", "columns": ["Remarque"], "rows": [["Exercice clos le 31 décembre"]]},
        {"name": "Bilan", "columns": ["Poste", "Montant"],
         "rows": [["Actif immobilisé", 1200000], ["Capitaux propres", 800000],
                  ["Dettes fournisseurs", 400000]]},
    ]}))


async def search(services: Services, user: User, query: str) -> dict[str, Any]:
    ctx = Library(services, [user]).ctx(user)
    return await by_name()["search_user_files"].run(ctx, {"query": query})


async def test_hybrid_search_finds_a_paraphrase_and_names_the_sheet(
    make_services: MakeServices, users_of: Users, embeddings: FakeEmbeddings
) -> None:
    services = await make_services()
    me, other = await users_of(services, "+2250700000001", "+2250700000002")
    sheet = await upload(services, me, "comptes-2025.xlsx", balance_sheet(), MIME_BY_EXT[".xlsx"])
    lesson = await upload(services, me, "fractions.txt", "Additionner des fractions : le dénominateur "
                          "commun d'abord.".encode())
    await upload(services, other, "bilan-voisin.txt", b"Bilan de l'autre : actif et passif.")
    # Stored: cut, keyword-indexed and embedded at once (no pass needed): found by meaning at once.
    keywords_only = await search(services, me, "fractions")
    assert [r["file_id"] for r in keywords_only["results"]] == [lesson.id]
    assert "«fractions»" in keywords_only["results"][0]["snippet"]
    assert [r["file_id"] for r in (await search(services, me, "état financier"))["results"]][:1] == [sheet.id]
    assert await library.embed_pending(services) == library.EmbedReport(embedded=0, failed=0)
    first = embeddings.requests[0]
    assert first["model"] == "fake-embed-1" and len(first["input"]) == 2  # the workbook's two sheets
    assert first["input"][0].startswith("comptes-2025.xlsx (feuille Notes)\n")
    # The vectors are kept as sent (the stand-in answers them in reverse order, each with its index).
    async with services.sessions() as db:
        chunk = (await db.execute(select(LibraryChunk).where(LibraryChunk.file_id == lesson.id))).scalar_one()
    expected = np.array(vector(library.index.passage_text("fractions.txt", "", chunk.text)), dtype=np.float32)
    assert chunk.embedding is not None and chunk.model == "fake-embed-1"
    stored = np.frombuffer(chunk.embedding, dtype="<f4")
    assert np.allclose(stored, expected / np.linalg.norm(expected))
    # By meaning now: the balance sheet's sheet, never the other user's file.
    found = (await search(services, me, "état financier"))["results"]
    assert found[0]["file_id"] == sheet.id and found[0]["where"] == "feuille Bilan"
    assert all(r["file_id"] in (sheet.id, lesson.id) for r in found)
    # The sheet's name is one of its words.
    off_sheet = await make_services(EMBEDDINGS="off")
    named = (await search(off_sheet, me, "bilan"))["results"]
    assert [(r["file_id"], r["where"]) for r in named] == [(sheet.id, "feuille Bilan")]
    # Without embeddings the same index still answers by keywords.
    off = await make_services(EMBEDDINGS="off")
    assert [r["file_id"] for r in (await search(off, me, "dénominateur"))["results"]] == [lesson.id]
    assert (await search(off, me, "état financier"))["results"] == []


async def test_an_embedding_failure_keeps_the_file_searchable_and_is_retried(
    make_services: MakeServices, users_of: Users, embeddings: FakeEmbeddings
) -> None:
    services = await make_services()
    (me,) = await users_of(services, "+2250700000001")
    embeddings.fail_next = 2  # as it is stored, then at the pass
    row = await upload(services, me, "bilan.txt", "Bilan : actif immobilisé et passif circulant.".encode())
    assert await library.embed_pending(services) == library.EmbedReport(embedded=0, failed=1)
    async with services.sessions() as db:
        chunk = (await db.execute(select(LibraryChunk).where(LibraryChunk.file_id == row.id))).scalar_one()
    assert chunk.embedding is None and chunk.attempts == 1
    assert chunk.embed_after is not None and chunk.embed_after > services.clock()
    assert [r["file_id"] for r in (await search(services, me, "actif"))["results"]] == [row.id]
    # Not before its time, then embedded.
    assert await library.embed_pending(services) == library.EmbedReport(0, 0)
    services.clock.advance(seconds=31)  # type: ignore[attr-defined]
    assert await library.embed_pending(services) == library.EmbedReport(embedded=1, failed=0)
    assert [r["file_id"] for r in (await search(services, me, "état financier"))["results"]] == [row.id]
    # A refused key is a failure too, told by its status.
    refused = await make_services(EMBEDDINGS_API_KEY="wrong")
    with pytest.raises(library.EmbeddingError, match="401"):
        await library.embedder_for(refused).embed(["x"], query=True)  # type: ignore[union-attr]
    # The query cannot be embedded: keywords answer alone.
    assert [r["file_id"] for r in (await search(refused, me, "actif"))["results"]] == [row.id]


async def test_reindex_fills_files_stored_before_and_follows_changed_text(
    make_services: MakeServices, users_of: Users, capsys: pytest.CaptureFixture[str]
) -> None:
    services = await make_services()
    me, other = await users_of(services, "+2250700000001", "+2250700000002")
    mine = await upload(services, me, "kermesse.txt", b"La kermesse annuelle de l'ecole.")
    theirs = await upload(services, other, "cantine.txt", b"Le menu de la cantine scolaire.")
    async with services.sessions() as db:  # as before this index existed
        await db.execute(delete(LibraryChunk))
        await db.commit()
    assert (await search(services, me, "kermesse"))["results"] == []
    command = console.library_command
    assert await command(services.settings, argparse.Namespace(phone="+225 07 00 00 00 01")) == 0
    assert "1 file(s) indexed" in capsys.readouterr().out
    assert [r["file_id"] for r in (await search(services, me, "kermesse"))["results"]] == [mine.id]
    assert (await search(services, other, "cantine"))["results"] == []  # only that number's files
    assert await command(services.settings, argparse.Namespace(phone="+2250799999999")) == 1
    assert await command(services.settings, argparse.Namespace(phone="pas un numéro")) == 2
    assert await command(services.settings, argparse.Namespace(phone=None)) == 0
    assert [r["file_id"] for r in (await search(services, other, "cantine"))["results"]] == [theirs.id]
    async with services.sessions() as db:
        embedded = (await db.execute(select(LibraryChunk.model))).scalars().all()
    assert embedded == ["fake-embed-1", "fake-embed-1"]  # reindex embeds too
    # A photo read later (OCR) or a voice note heard: its new text is indexed by the pass.
    photo = await upload(services, me, "IMG_0001.jpg", b"\xff\xd8\xff\xe0" + b"\x00" * 64, "image/jpeg")
    assert (await search(services, me, "IMG_0001"))["results"] == []  # its name alone: no hit
    async with services.sessions() as db:
        fresh = await db.get(UserFile, photo.id)
        assert fresh is not None
        fresh.text = "Exercice 3 : calculer l'aire du trapèze."
        await db.commit()
    assert await library.index_stale(services) == 1
    assert await library.index_stale(services) == 0
    assert [r["file_id"] for r in (await search(services, me, "trapeze"))["results"]] == [photo.id]
    # Deleting the file deletes its chunks.
    async with services.sessions() as db:
        assert await library.delete_file(services, db, me.id, photo.id)
        await db.commit()
        left = (await db.execute(select(LibraryChunk).where(LibraryChunk.file_id == photo.id))).all()
    assert left == []


async def test_the_pass_takes_each_users_newest_chunks_in_turns(
    make_services: MakeServices, users_of: Users, embeddings: FakeEmbeddings
) -> None:
    quiet = await make_services(EMBEDDINGS="off")  # files stored while embeddings were off
    busy, newcomer = await users_of(quiet, "+2250700000001", "+2250700000002")
    large = "\n\n".join(f"Paragraphe {i}. " + "révision " * 250 for i in range(30)).encode()  # 30 chunks
    for n in range(10):
        await upload(quiet, busy, f"gros-{n}.txt", large)
    fresh = await upload(quiet, newcomer, "nouveau.txt", b"Une nouvelle lecon sur les fractions.")
    services = await make_services()
    assert await library.embed_pending(services) == library.EmbedReport(library.index.EMBED_PER_PASS, 0)
    async with services.sessions() as db:
        done = (await db.execute(select(LibraryChunk.file_id, LibraryChunk.user_id)
                                 .where(LibraryChunk.embedding.is_not(None)))).all()
    # 300 chunks of one user waiting never hold back another's new file; each user's newest first.
    assert (fresh.id, newcomer.id) in done
    busy_files = sorted({fid for fid, uid in done if uid == busy.id})
    assert busy_files[-1] == fresh.id - 1 and busy_files == list(range(busy_files[0], fresh.id))
    # A search embeds the asking user's own waiting chunks first.
    before = len(done)
    await search(services, busy, "révision")
    async with services.sessions() as db:
        after = await db.scalar(select(func.count()).select_from(LibraryChunk)
                                .where(LibraryChunk.embedding.is_not(None), LibraryChunk.user_id == busy.id))
    assert after is not None and after >= before - 1 + library.index.EMBED_PER_PASS


async def test_a_file_matched_by_its_name_alone_is_no_result(make_services: MakeServices,
                                                              users_of: Users) -> None:
    services = await make_services(EMBEDDINGS="off")
    [me] = await users_of(services, "+2250700000001")
    await upload(services, me, "bilan-2025.txt", b"Recette du gateau au chocolat : farine, sucre, oeufs.")
    empty = await search(services, me, "bilan")
    assert empty == {"success": True, "query": "bilan", "results": [],
                     "message": "aucun fichier ne correspond"}
    assert [r["name"] for r in (await search(services, me, "gateau bilan"))["results"]] == ["bilan-2025.txt"]


async def test_a_damaged_photo_or_scan_is_kept_without_text_and_scans_stop_at_ocr_max_pages(
    make_services: MakeServices, users_of: Users
) -> None:
    services = await make_services(EMBEDDINGS="off", OCR_MAX_PAGES="1")
    [me] = await users_of(services, "+2250700000001")
    broken_pdf, broken_jpeg = b"%PDF-1.4 not really a document", b"\xff\xd8 not an image"
    scan = await upload(services, me, "scan.pdf", broken_pdf, "application/pdf")
    photo = await upload(services, me, "photo.jpg", broken_jpeg, "image/jpeg")
    for row, data in ((scan, broken_pdf), (photo, broken_jpeg)):
        assert library.needs_reading(row)
        assert await library.read_text_of(services, row, data) == ""  # said in the log, nothing raised
    async with services.sessions() as db:
        kept = (await db.execute(select(UserFile.name, UserFile.text).order_by(UserFile.id))).all()
    assert kept == [("scan.pdf", None), ("photo.jpg", None)]  # both files kept, as sent
    # Three scanned pages, OCR_MAX_PAGES=1: one page read.
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 48)
    pages = []
    for n in range(3):
        page = Image.new("RGB", (1200, 300), "white")
        ImageDraw.Draw(page).text((40, 120), f"Page numero {n + 1} du cahier", fill="black", font=font)
        pages.append(page)
    out = io.BytesIO()
    pages[0].save(out, "PDF", save_all=True, append_images=pages[1:], resolution=150)
    read = await library.reading.scanned_pages(out.getvalue(), services.settings.library.ocr_max_pages)
    assert len(read) == 1 and "cahier" in read[0]
