"""The user's files: uploaded and generated, stored with their text and indexed for search.

Every lookup is scoped to one user: a file id of someone else behaves exactly like a missing id.
A class's file (`cohort_id`, origin « class ») is stored and indexed once; a lookup takes the
`cohorts` its caller says the user is in now, and only a person's own file is ever deleted.
Bytes live in the file store (services.files) under keys we make; the user's file name is only
ever a label.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.agent.toolspec import ToolContext
from bot.documents import run_cpu
from bot.documents.extract import MAX_TEXT_CHARS, extract_text, kind_of
from bot.documents.names import extension_of, mime_for, safe_filename
from bot.library.index import index_file
from bot.library.names import clean_title, document_title, unique_name
from bot.services import Services
from bot.storage.models import UserFile

log = logging.getLogger(__name__)

ORIGINS = ("upload", "generated", "class")


def new_storage_key(user_id: int | None, name: str, mime: str, *, cohort_id: int | None = None) -> str:
    ext = extension_of(name, mime)
    ext = ext if re.fullmatch(r"\.[a-z0-9]{1,8}", ext) else ".bin"
    owner = f"c{int(cohort_id)}" if cohort_id is not None else f"u{int(user_id or 0)}"
    return f"{owner}/{secrets.token_hex(16)}{ext}"


def visible(user_id: int, cohorts: Sequence[int] = ()) -> ColumnElement[bool]:
    """The user's own files, and the files of the classes in `cohorts` (those they are in now)."""
    own = UserFile.user_id == user_id
    return or_(own, UserFile.cohort_id.in_(list(cohorts))) if cohorts else own


async def add_file(
    services: Services,
    db: AsyncSession,
    *,
    user_id: int | None,
    name: str,
    mime: str,
    data: bytes,
    origin: str,
    text_content: str | None = None,
    caption: str | None = None,
    own_title: bool = False,
    cohort_id: int | None = None,
) -> UserFile:
    """Stores `data`, extracts its text and records it as the user's file (flushed, not committed).

    `text_content` skips extraction when the caller already has the text (generated files).
    `own_title` (a received file): named after `caption` when it names anything, else after the
    document's own title, made unique among the user's files; `name` is kept when neither does.
    Its chunks are indexed by keywords at once and embedded (index.py). With `cohort_id` (and no
    `user_id`), the class's file: origin « class ».
    """
    if origin not in ORIGINS:
        raise ValueError(f"origin must be one of {ORIGINS}, got {origin!r}")
    clean_name = safe_filename(name, default="fichier")
    clean_mime = mime_for(clean_name, mime)
    if text_content is None:
        try:
            text_content = await run_cpu(extract_text, data, clean_name, clean_mime)
        except Exception:  # timeout or crash in a parser: keep the file, without text
            text_content = None
    if text_content:
        text_content = text_content.replace("\x00", "")[:MAX_TEXT_CHARS]
    if own_title and user_id is not None:
        clean_name = await _titled(db, user_id, clean_name, clean_mime, data, text_content, caption)
    key = new_storage_key(user_id, clean_name, clean_mime, cohort_id=cohort_id)
    await services.files.put(key, data)
    row = UserFile(
        user_id=user_id,
        cohort_id=cohort_id,
        name=clean_name,
        mime=clean_mime,
        size=len(data),
        origin=origin,
        storage_key=key,
        text=text_content,
        created_at=services.clock(),
    )
    db.add(row)
    try:
        await db.flush()
        await index_file(services, db, row, data)
    except Exception:
        await services.files.delete(key)
        raise
    return row


async def _titled(db: AsyncSession, user_id: int, name: str, mime: str, data: bytes, text: str | None,
                  caption: str | None) -> str:
    title = clean_title(caption)
    if not title and kind_of(name, mime):  # a photo has no title before it is read (reading.py)
        try:
            title = await run_cpu(document_title, data, name, mime, text)
        except Exception:  # timeout or crash in a parser: the name it came with
            title = ""
    return await unique_name(db, user_id, title, extension_of(name, mime)) if title else name


async def get_file(db: AsyncSession, user_id: int, file_id: Any,
                   cohorts: Sequence[int] = ()) -> UserFile | None:
    """The user's file with this id, or of one of `cohorts`, else None (also when it belongs to
    someone else). `file_id` is what the model sent: anything `int()` does not take finds nothing."""
    try:
        file_id = int(file_id)
    except (TypeError, ValueError):
        return None
    return (
        await db.execute(select(UserFile).where(UserFile.id == file_id, visible(user_id, cohorts)))
    ).scalar_one_or_none()


async def read_bytes(services: Services, user_file: UserFile) -> bytes:
    return await services.files.get(user_file.storage_key)


async def list_files(db: AsyncSession, user_id: int, *, limit: int = 50, offset: int = 0,
                     cohorts: Sequence[int] = ()) -> list[UserFile]:
    """Newest first: the user's files and those of `cohorts`."""
    rows = await db.execute(
        select(UserFile)
        .where(visible(user_id, cohorts))
        .order_by(UserFile.created_at.desc(), UserFile.id.desc())
        .limit(limit)
        .offset(offset)
    )
    return list(rows.scalars())


async def list_files_counted(db: AsyncSession, user_id: int, *, limit: int = 50, offset: int = 0,
                             cohorts: Sequence[int] = ()) -> tuple[list[UserFile], int]:
    """`list_files` and how many files there are in all, in one statement (the count is a window
    over the rows before LIMIT); a page past the end asks for the count alone."""
    rows = (await db.execute(
        select(UserFile, func.count().over())
        .where(visible(user_id, cohorts))
        .order_by(UserFile.created_at.desc(), UserFile.id.desc())
        .limit(limit)
        .offset(offset)
    )).all()
    if rows:
        return [row[0] for row in rows], int(rows[0][1])
    return [], (await count_files(db, user_id, cohorts) if offset else 0)


async def count_files(db: AsyncSession, user_id: int, cohorts: Sequence[int] = ()) -> int:
    return int(
        (
            await db.execute(select(func.count()).select_from(UserFile).where(visible(user_id, cohorts)))
        ).scalar_one()
    )


async def delete_file(services: Services, db: AsyncSession, user_id: int, file_id: int) -> bool:
    """Deletes the user's own file; a class's file is never theirs to delete (not found here)."""
    row = await get_file(db, user_id, file_id)
    if row is None:
        return False
    await db.execute(delete(UserFile).where(UserFile.id == row.id, UserFile.user_id == user_id))
    await services.files.delete(row.storage_key)
    return True


# --- generated files ----------------------------------------------------------------------------

# What WhatsApp accepts as a media attachment (documents, images, audio, video).
WHATSAPP_MEDIA_TYPES = frozenset({
    "application/pdf",
    "application/msword",
    "application/vnd.ms-excel",
    "application/vnd.ms-powerpoint",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "text/plain",
    "image/jpeg", "image/png", "image/webp",
    "audio/ogg", "audio/amr", "audio/aac", "audio/mpeg", "audio/3gpp",
    "video/mp4", "video/3gpp",
})


def generated_result(row: UserFile, **extra: object) -> dict[str, object]:
    """What the model is told about a file: never its bytes."""
    return {"success": True, "file_id": row.id, "name": row.name, "mime": row.mime, "size": row.size, **extra}


async def publish_generated(
    ctx: ToolContext,
    *,
    name: str,
    mime: str,
    data: bytes,
    text_content: str | None,
    caption: str = "",
    **extra: object,
) -> dict[str, object]:
    """Stores a generated file as the user's, commits, then sends it to the user now.

    The row is committed before sending because Twilio fetches the file's link right away.
    """
    limit = ctx.services.settings.media_max_bytes
    if len(data) > limit:
        return {
            "success": False,
            "error": f"the file would weigh {len(data) // 1024} KB, more than the {limit // 1024} KB "
            "a message can carry: make it shorter or split it into several files",
        }
    async with ctx.services.sessions() as db:
        row = await add_file(
            ctx.services,
            db,
            user_id=ctx.user_id,
            name=name,
            mime=mime,
            data=data,
            origin="generated",
            text_content=text_content or "",
        )
        await db.commit()
    caption = caption.strip()[:900] or ("📄 " + row.name)
    delivered = True
    delivery: dict[str, object] = {}
    try:
        if ctx.channel == "whatsapp" and row.mime not in WHATSAPP_MEDIA_TYPES:
            # WhatsApp refuses this type as an attachment (HTML, Markdown): send the link instead,
            # one that lasts: the person may open it days later.
            from bot.channel.links import file_url

            sent = await ctx.send(text=f"{caption}\n{file_url(ctx.services.settings, row, read_later=True)}")
        else:
            sent = await ctx.send(text=caption, media=row)
        # Delivered only when the provider accepted it (the outbound result says so and why not).
        if sent is not None and hasattr(sent, "for_model"):
            delivery = sent.for_model()
            delivered = bool(delivery.pop("delivered"))
    except Exception as exc:  # the file is kept; the model can say so and offer it again
        log.warning("delivery of file %s failed: %s", row.id, exc)
        delivered = False
    result = generated_result(row, delivered=delivered, **delivery, **extra)
    if not delivered:
        result["note"] = str(delivery.get("what_user_can_do")
                             or "the file was saved in the user's library but could not be sent now")
    return result
