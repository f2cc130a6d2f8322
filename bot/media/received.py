"""Files users send (MediaUrlN): downloaded with the account's credentials, size-capped, stored.

Twilio protects media URLs with HTTP Basic auth and answers with a redirect to the file's storage;
httpx drops the credentials when the redirect leaves Twilio's host, which is what we want.

A `MediaUrlN` is fetched only from Twilio over https (api.twilio.com, any *.twilio.com host,
media.twiliocdn.com / mms.twiliocdn.com), or from the origin of TWILIO_API_BASE_URL (a test's fake
Twilio): the account's credentials go with the first request, so a URL elsewhere (another host, an
IP literal, a userinfo trick such as https://api.twilio.com@evil.example/) is not fetched at all and
counts as a file not received. The URL is parsed by httpx, which then fetches that very parse.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import mimetypes
import uuid
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from bot.config import Settings
from bot.media.errors import MediaError
from bot.services import Services
from bot.storage.models import InboundMessage, User, UserFile

log = logging.getLogger("bot.media.received")


class DownloadError(MediaError):
    """A file Twilio holds could not be fetched (not a Twilio URL, an HTTP error, too large)."""


def _extension(mime: str) -> str:
    if mime == "image/jpeg":
        return ".jpg"
    return mimetypes.guess_extension(mime.split(";")[0].strip()) or ".bin"


TWILIO_MEDIA_HOSTS = frozenset({"api.twilio.com", "media.twiliocdn.com", "mms.twiliocdn.com"})


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"https": 443, "http": 80}.get(url.scheme)
    return url.scheme, url.host, url.port or default


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def media_url(settings: Settings, raw: str) -> httpx.URL | None:
    """The URL to fetch an inbound file from, or None when it is not Twilio's (module docstring)."""
    if "\\" in raw or any(ch.isspace() or ord(ch) < 0x20 for ch in raw):
        return None
    try:
        url = httpx.URL(raw)
    except (httpx.InvalidURL, TypeError, ValueError):
        return None
    if url.userinfo or not url.host:
        return None
    if _origin(url) == _origin(httpx.URL(settings.twilio_api_base_url)):
        return url
    host = url.host.lower().rstrip(".")
    if url.scheme != "https" or url.port not in (None, 443) or _is_ip(host):
        return None
    return url if host in TWILIO_MEDIA_HOSTS or host.endswith(".twilio.com") else None


async def download(services: Services, raw_url: str) -> tuple[bytes, str]:
    settings = services.settings
    url = media_url(settings, raw_url)
    if url is None:
        raise DownloadError(f"not a Twilio media URL: {raw_url[:200]!r}")
    auth = (settings.twilio_account_sid, settings.twilio_auth_token) if settings.twilio_account_sid else None
    cap = settings.media_max_bytes
    try:
        async with services.http.stream("GET", url, auth=auth, follow_redirects=True,
                                        timeout=httpx.Timeout(30.0, connect=10.0)) as resp:
            if resp.status_code != 200:
                raise DownloadError(f"HTTP {resp.status_code}")
            declared = resp.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > cap:
                raise DownloadError(f"file too large ({declared} bytes)")
            chunks: list[bytes] = []
            size = 0
            async for chunk in resp.aiter_bytes():
                size += len(chunk)
                if size > cap:
                    raise DownloadError(f"file too large (over {cap} bytes)")
                chunks.append(chunk)
            return b"".join(chunks), resp.headers.get("Content-Type", "")
    except httpx.HTTPError as exc:
        raise DownloadError(f"download failed: {exc!r}") from exc


async def store(
    services: Services, db: AsyncSession, user_id: int, name: str, mime: str, data: bytes,
    origin: str = "upload", caption: str | None = None,
) -> UserFile:
    """Keeps the bytes as one of the user's files (origin "upload", or "generated" for a spoken reply)."""
    try:
        from bot import library  # extracts the text for search, when the file library exists
    except ImportError:
        add_file = None
    else:
        add_file = getattr(library, "add_file", None)
    if add_file is not None:
        stored: UserFile = await add_file(services, db, user_id=user_id, name=name, mime=mime, data=data,
                                          origin=origin, caption=caption, own_title=origin == "upload")
        return stored
    key = f"users/{user_id}/{uuid.uuid4().hex}{_extension(mime)}"
    await services.files.put(key, data)
    row = UserFile(user_id=user_id, name=name, mime=mime, size=len(data), origin=origin, storage_key=key,
                   created_at=services.clock())
    db.add(row)
    await db.flush()
    return row


async def receive_all(
    services: Services, db: AsyncSession, user: User, row: InboundMessage
) -> tuple[list[UserFile], int]:
    """(files received, number of files that could not be)."""
    received: list[UserFile] = []
    failed = 0
    for index, item in enumerate(row.media or []):
        url = item.get("url", "")
        try:
            data, served_type = await download(services, url)
            declared = item.get("content_type") or served_type or "application/octet-stream"
            mime = declared.split(";")[0].strip()
            stamp = (row.created_at or services.clock()).strftime("%Y%m%d-%H%M%S")
            name = f"{mime.split('/')[0]}-{stamp}-{index + 1}{_extension(mime)}"
            received.append(await store(services, db, user.id, name, mime, data, caption=row.body))
        except DownloadError as exc:
            failed += 1
            log.warning("media not received", extra={"inbound_id": row.id, "index": index, "error": str(exc)})
        except Exception:
            failed += 1
            log.exception("media not stored", extra={"inbound_id": row.id, "index": index})
    return received, failed


# services.extra[READINGS]: file id -> the task reading that file now (bot.agent.vision awaits it
# rather than reading the photo a second time).
READINGS = "media.readings"
Reading = tuple[int, bool, "asyncio.Task[str]"]  # file id, named after its first line, the task


def start_reading(services: Services, files: list[UserFile], caption: str | None) -> list[Reading]:
    """Starts reading the photos and scans among `files` (OCR), while the turn goes on."""
    from bot import library

    readings: list[Reading] = []
    running = services.extra.setdefault(READINGS, {})
    for row in files:
        if library.needs_reading(row):
            task = asyncio.create_task(_read(services, row), name=f"read-file-{row.id}")
            running[row.id] = task
            readings.append((row.id, not library.clean_title(caption), task))
    return readings


OCR_AT_ONCE = 1  # readings per process at a time: Tesseract takes a core, the turns need the other


async def _read(services: Services, row: UserFile) -> str:
    from bot import library

    slots = services.extra.setdefault("media.ocr_slots", asyncio.Semaphore(OCR_AT_ONCE))
    async with slots:
        return await library.read_text_of(services, row, await services.files.get(row.storage_key))


async def finish_reading(services: Services, db: AsyncSession, readings: list[Reading]) -> None:
    """Keeps what was read on each file, names a photo without caption after its first line, and
    indexes and embeds it, in `db` (flushed: committed with the message)."""
    from bot import library

    try:
        for file_id, rename, task in readings:
            text = await task
            row = await db.get(UserFile, file_id)
            if row is not None:
                await library.read_and_index(services, db, row, text, rename=rename)
    finally:
        stop_reading(services, readings)


def stop_reading(services: Services, readings: list[Reading]) -> None:
    running = services.extra.get(READINGS, {})
    for file_id, _, task in readings:
        task.cancel()
        running.pop(file_id, None)


def describe(files: list[UserFile]) -> list[dict[str, Any]]:
    return [{"id": f.id, "name": f.name, "mime": f.mime, "size": f.size} for f in files]
