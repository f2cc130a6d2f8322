"""The library's index on a real database (SQLite and PostgreSQL): files indexed when stored,
embedded through the OpenAI-compatible stand-in, hybrid search that finds a paraphrase and names
the sheet, an embedding failure that loses nothing and is retried, and `library reindex`."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import pytest
from sqlalchemy import delete, select

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
    # Stored: cut and keyword-indexed at once, not yet embedded.
    keywords_only = await search(services, me, "fractions")
    assert [r["file_id"] for r in keywords_only["results"]] == [lesson.id]
    assert "«fractions»" in keywords_only["results"][0]["snippet"]
    assert (await search(services, me, "état financier"))["results"] == []  # no word in common
    report = await library.embed_pending(services)
    assert report == library.EmbedReport(embedded=4, failed=0)  # 2 sheets, the lesson, the neighbour's
    first = embeddings.requests[0]
    assert first["model"] == "fake-embed-1" and len(first["input"]) == 4  # EMBEDDINGS_BATCH
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
    row = await upload(services, me, "bilan.txt", "Bilan : actif immobilisé et passif circulant.".encode())
    embeddings.fail_next = 1
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
    assert [r["file_id"] for r in (await search(services, me, "IMG_0001"))["results"]] == [photo.id]
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
