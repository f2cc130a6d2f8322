"""A file sent from a dashboard page (multipart/form-data): read for the hook of pages.py, so the
CSRF token in it is checked as a urlencoded form's is, and the file handed to the handler. The
body is read in chunks and stops at MAX_BYTES (413), never through the app's client_max_size
(WEBHOOK_MAX_BYTES, sized for Twilio's forms); a text field that is not UTF-8 or holds a NUL is
MalformedRequest (400), as in read_form.

Then what the class page does with an items file: checked whole (bot.school.read_items), added to
the class's bank in one transaction, or the problems by line, in the page's language."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import BodyPartReader, web
from sqlalchemy.exc import IntegrityError

from bot.channel.malformed import MalformedRequest, unfit
from bot.school import ItemsError, add_items, read_items
from bot.services import Services
from bot.storage.models import Cohort
from bot.texts import fr_en

__all__ = ["MAX_BYTES", "MAX_PARTS", "MULTIPART", "ItemsResult", "Upload", "import_items", "read_multipart"]

MULTIPART = "multipart/form-data"
MAX_BYTES = 1024 * 1024 + 64 * 1024  # an items file (bot.school: 1 MB) and the form around it
MAX_PARTS = 10
_FIELD_MAX = 4096


@dataclass(frozen=True)
class Upload:
    filename: str
    data: bytes


@dataclass(frozen=True)
class ItemsResult:
    """An items file's outcome: `problems` (nothing stored) or how many were added and already there."""

    problems: tuple[str, ...] = ()
    added: int = 0
    already: int = 0


async def _part_bytes(part: BodyPartReader, left: int) -> bytes:
    chunks: list[bytes] = []
    while chunk := await part.read_chunk(64 * 1024):
        left -= len(chunk)
        if left < 0:
            raise web.HTTPRequestEntityTooLarge(max_size=MAX_BYTES, actual_size=MAX_BYTES + 1)
        chunks.append(chunk)
    return b"".join(chunks)


async def read_multipart(request: web.Request) -> tuple[dict[str, str], dict[str, Upload]]:
    """The text fields and the files of a multipart body (a repeated name: the last one)."""
    if (request.content_length or 0) > MAX_BYTES:
        raise web.HTTPRequestEntityTooLarge(max_size=MAX_BYTES, actual_size=request.content_length or 0)
    fields: dict[str, str] = {}
    files: dict[str, Upload] = {}
    left, parts = MAX_BYTES, 0
    reader = await request.multipart()
    while (part := await reader.next()) is not None:
        parts += 1
        if parts > MAX_PARTS or not isinstance(part, BodyPartReader):
            raise MalformedRequest("not a form of a page")
        data = await _part_bytes(part, left)
        left -= len(data)
        name = part.name or ""
        if part.filename is not None:
            files[name] = Upload(part.filename, data)
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedRequest("a form field is not UTF-8") from None
        if len(text) > _FIELD_MAX or unfit(name) or unfit(text):
            raise MalformedRequest("a form field holds a NUL byte or is too long")
        fields[name] = text
    return fields, files


async def import_items(services: Services, cohort: Cohort, upload: Upload | None,
                       language: str) -> ItemsResult:
    """The file checked whole and, when every row is right, added to the class's bank."""
    if upload is None or not upload.data:
        return ItemsResult(problems=(fr_en(language, "Aucun fichier choisi.", "No file chosen."),))
    try:
        rows = read_items(upload.data, upload.filename, language)
    except ItemsError as exc:
        return ItemsResult(problems=tuple(str(exc).splitlines()))
    for attempt in range(2):
        try:
            async with services.sessions() as db, db.begin():
                added, already = await add_items(db, cohort.id, rows, services.clock())
            break
        except IntegrityError:
            if attempt:  # the same file sent twice at that very moment: the second sees the first
                raise
    return ItemsResult(added=added, already=already)
