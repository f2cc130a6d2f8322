"""The library's index: a file cut into chunks when it is stored (keyword text at once, its first
EMBED_AT_ONCE chunks embedded at once too), the others embedded by a pass that runs every
INDEX_INTERVAL_S (each user's newest chunks first, the users in turns; failed ones again with
backoff) or by the user's next search, and `reindex` for files stored before or after a change of
model."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, delete, exists, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot import lanes
from bot.documents import run_cpu
from bot.documents.extract import kind_of
from bot.library.chunks import Chunk, chunk_file, pdf_pages
from bot.library.embeddings import EmbeddingError, embedder_for, to_bytes
from bot.library.text import keyword_terms, name_terms
from bot.periodic import Job
from bot.services import Services
from bot.storage.models import LibraryChunk, UserFile

__all__ = ["INDEX_INTERVAL_S", "EmbedReport", "embed_pending", "index_file", "index_jobs", "index_stale",
           "reindex"]

log = logging.getLogger(__name__)

INDEX_INTERVAL_S = 30.0
# Chunks embedded per pass at most (the next pass takes the rest): on 2 busy cores the local model
# embeds about one 250-word chunk a second (python -m bench.search).
EMBED_PER_PASS = 64
EMBED_AT_ONCE = 16  # chunks of a new file embedded as it is indexed (a few seconds at most)
MAX_BACKOFF_S = 3600.0
PASSAGE_CHARS = 2000  # what the model reads of a chunk (e5 reads 512 tokens at most)
SCAN_LAYER_CHARS = 20  # a PDF's text layer shorter than this: a scan (library.reading reads it by OCR)


async def _pages(services: Services, row: UserFile, data: bytes | None) -> tuple[list[str] | None, bool]:
    """A PDF's pages read again from its bytes (the stored text has no page marks), and whether
    they were read by OCR: a scan's pages are its text as read (library.reading), form feeds
    between them; a one-page scan has none, and its text layer is empty."""
    if kind_of(row.name, row.mime) != "pdf":
        return None, False
    stored = row.text or ""
    if "\f" in stored:
        return stored.split("\f"), True
    try:
        data = data if data is not None else await services.files.get(row.storage_key)
        pages = await run_cpu(pdf_pages, data)
    except Exception as exc:  # the text alone, without pages: still searchable
        log.info("pages not read", extra={"file_id": row.id, "error": str(exc)})
        return None, False
    if stored.strip() and len("".join(pages).strip()) < SCAN_LAYER_CHARS:
        return [stored], True
    return pages, False


async def index_file(services: Services, db: AsyncSession, row: UserFile, data: bytes | None = None,
                     *, only_if_changed: bool = False) -> int:
    """Cuts the file's text into chunks with their keyword text (flushed, not committed), replacing
    what was indexed of it before. Returns the number of chunks (0: `only_if_changed` and the
    index already follows the file's text)."""
    if only_if_changed and await _current(db, row):
        return 0
    pages, read = await _pages(services, row, data)
    # Cutting a long text and its keywords is seconds of Python: in a thread, never on the loop.
    cut = await lanes.cpu(_cut, row.text, row.name, row.mime, pages, read)
    await db.execute(delete(LibraryChunk).where(LibraryChunk.file_id == row.id))
    now = services.clock()
    rows = [LibraryChunk(user_id=row.user_id, cohort_id=row.cohort_id, file_id=row.id, ordinal=chunk.ordinal,
                         locator=chunk.locator[:80], text=chunk.text, terms=terms, words=len(terms.split()),
                         source_chars=len(row.text or ""), attempts=0, created_at=now)
            for chunk, terms in cut]
    await _embed_now(services, row.name, rows)
    db.add_all(rows)
    await db.flush()
    return len(cut)


def _cut(text: str | None, name: str, mime: str, pages: list[str] | None,
         read: bool) -> list[tuple[Chunk, str]]:
    """The file's chunks, each with its keyword text (the file's name is in every chunk's)."""
    named = " ".join(name_terms(name))
    cut = []
    for chunk in chunk_file(text, name, mime, pages, read=read):
        is_sheet = chunk.locator.startswith("feuille ")
        sheet = chunk.locator.split(" (")[0].removeprefix("feuille ") if is_sheet else ""
        words = keyword_terms(f"{sheet}\n{chunk.text}")  # a sheet's name is one of its words
        cut.append((chunk, f"{named} {' '.join(words)}".strip()))
    return cut


async def _embed_now(services: Services, name: str, rows: list[LibraryChunk]) -> None:
    """The file's first chunks embedded right away, so a search just after the upload finds it by
    meaning; the rest, or all after a failure, wait for the pass or for the user's next search."""
    embedder = embedder_for(services)
    head = [r for r in rows if r.text.strip()][:EMBED_AT_ONCE]
    if embedder is None or not head:
        return
    try:
        vectors = await embedder.embed([passage_text(name, r.locator, r.text) for r in head], query=False)
    except EmbeddingError as exc:
        log.info("chunks left for the pass", extra={"chunks": len(head), "error": str(exc)})
        return
    for chunk, vector in zip(head, vectors, strict=True):
        chunk.embedding, chunk.model = to_bytes(vector), embedder.model


async def _current(db: AsyncSession, row: UserFile) -> bool:
    found = await db.scalar(select(LibraryChunk.source_chars).where(
        LibraryChunk.file_id == row.id, LibraryChunk.ordinal == 0))
    return found is not None and found == len(row.text or "")


def _stale() -> ColumnElement[bool]:
    """Files whose first chunk does not match their text as it is now (or that have none)."""
    current = exists().where(
        LibraryChunk.file_id == UserFile.id, LibraryChunk.ordinal == 0,
        LibraryChunk.source_chars == func.length(func.coalesce(UserFile.text, "")),
    )
    return ~current


async def index_stale(services: Services, *, user_id: int | None = None, limit: int = 50) -> int:
    """Indexes files never indexed or whose text changed since (photos read, voice notes heard)."""
    done = 0
    async with services.sessions() as db:
        query = select(UserFile).where(_stale()).order_by(UserFile.id).limit(limit)
        if user_id is not None:
            query = query.where(UserFile.user_id == user_id)
        for row in (await db.execute(query)).scalars().all():
            await index_file(services, db, row)
            await db.commit()
            done += 1
    return done


async def reindex(services: Services, *, user_id: int | None = None) -> int:
    """Cuts every file (of one user, or all) again and embeds the chunks; returns the files done."""
    done = 0
    async with services.sessions() as db:
        query = select(UserFile.id).order_by(UserFile.id)
        if user_id is not None:
            query = query.where(UserFile.user_id == user_id)
        ids = list((await db.execute(query)).scalars())
    for file_id in ids:
        async with services.sessions() as db:
            row = await db.get(UserFile, file_id)
            if row is not None:
                await index_file(services, db, row)
                await db.commit()
                done += 1
    while (await embed_pending(services, user_id=user_id)).embedded:
        pass
    return done


@dataclass(frozen=True)
class EmbedReport:
    embedded: int
    failed: int


def _pending(model: str, now: datetime) -> ColumnElement[bool]:
    return and_(or_(LibraryChunk.embedding.is_(None), LibraryChunk.model != model),
                or_(LibraryChunk.embed_after.is_(None), LibraryChunk.embed_after <= now))


async def _due(services: Services, model: str, user_id: int | None, now: datetime) -> list[tuple[int, str]]:
    """Chunks to embed, each user's newest first; without `user_id`, the users taken in turns
    (round robin), so one user's ten large files never hold back another's new file; the classes'
    files (no user) take one turn together."""
    async with services.sessions() as db:
        if user_id is not None:
            users: list[int | None] = [user_id]
        else:
            users = list((await db.execute(select(LibraryChunk.user_id).where(_pending(model, now))
                                           .group_by(LibraryChunk.user_id).order_by(LibraryChunk.user_id)
                                           .limit(EMBED_PER_PASS))).scalars())
        queues = []
        for uid in users:
            query = (select(LibraryChunk.id, UserFile.name, LibraryChunk.locator, LibraryChunk.text)
                     .join(UserFile, UserFile.id == LibraryChunk.file_id)
                     .where(LibraryChunk.user_id.is_(None) if uid is None else LibraryChunk.user_id == uid,
                            _pending(model, now))
                     .order_by(LibraryChunk.file_id.desc(), LibraryChunk.ordinal).limit(EMBED_PER_PASS))
            queues.append((await db.execute(query)).all())
    turns = [queue[i] for i in range(EMBED_PER_PASS) for queue in queues if i < len(queue)][:EMBED_PER_PASS]
    return [(int(i), passage_text(name, locator, text)) for i, name, locator, text in turns]


def passage_text(name: str, locator: str, text: str) -> str:
    """What the model embeds of a chunk: where it comes from, then its words."""
    where = f"{name} ({locator})" if locator else name
    return f"{where}\n{text}"[:PASSAGE_CHARS]


async def embed_pending(services: Services, *, user_id: int | None = None) -> EmbedReport:
    """Embeds chunks without a vector of the current model, outside any transaction; on failure
    they keep their keywords and are tried again later, each time after a longer wait."""
    embedder = embedder_for(services)
    if embedder is None:
        return EmbedReport(0, 0)
    now = services.clock()
    due = await _due(services, embedder.model, user_id, now)
    if not due:
        return EmbedReport(0, 0)
    try:
        vectors = await embedder.embed([text for _, text in due], query=False)
    except EmbeddingError as exc:
        log.warning("chunks not embedded", extra={"chunks": len(due), "error": str(exc)})
        await _failed(services, [chunk_id for chunk_id, _ in due], now)
        return EmbedReport(0, len(due))
    async with services.sessions() as db:
        for (chunk_id, _), vector in zip(due, vectors, strict=True):
            await db.execute(update(LibraryChunk).where(LibraryChunk.id == chunk_id).values(
                embedding=to_bytes(vector), model=embedder.model, attempts=0, embed_after=None))
        await db.commit()
    return EmbedReport(len(due), 0)


async def _failed(services: Services, ids: list[int], now: datetime) -> None:
    async with services.sessions() as db:
        rows = (await db.execute(select(LibraryChunk.id, LibraryChunk.attempts)
                                 .where(LibraryChunk.id.in_(ids)))).all()
        for chunk_id, attempts in rows:
            wait = min(30.0 * 2 ** int(attempts), MAX_BACKOFF_S)
            await db.execute(update(LibraryChunk).where(and_(LibraryChunk.id == chunk_id)).values(
                attempts=int(attempts) + 1, embed_after=now + timedelta(seconds=wait)))
        await db.commit()


async def _tick(services: Services, now: datetime) -> None:
    await index_stale(services)
    await embed_pending(services)


def index_jobs(interval_s: float = INDEX_INTERVAL_S) -> list[Job]:
    """For the composition root: the pass that indexes files and embeds their chunks (every
    LIBRARY_INDEX_INTERVAL_S, `interval_s` here), in the background lane (bot.lanes)."""
    return [Job(name="library_index", interval_s=interval_s, fn=_tick)]
