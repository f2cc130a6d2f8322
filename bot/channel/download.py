"""A stored file's bytes on `/files/…`: streamed from the store, with one byte range and an ETag.

A response never holds the file: the store yields FileStore chunks (CHUNK_BYTES) and each write
waits while the reader's socket is full (aiohttp drains past its high-water mark), so a slow
reader costs one chunk and the socket's buffer, whatever the file's size.

The ETag hashes the storage key and the size: a key is written once (new bytes get a new key), so
it names one content, and the hash does not show the key. `If-None-Match` that matches is 304.
`Range`: one `bytes=` range is 206 with `Content-Range`; a range starting past the end is 416 with
`Content-Range: bytes */size`; several ranges or a malformed header get the whole file (a server
may ignore Range), as does an `If-Range` naming another validator.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import AsyncIterator

from aiohttp import web

from bot.storage.filestore import FileStore

log = logging.getLogger("bot.channel.download")

# One range, ASCII digits only; 18 digits at most, so int() never reads a huge number.
_RANGE = re.compile(r"bytes=([0-9]{0,18})-([0-9]{0,18})", re.ASCII | re.IGNORECASE)


async def aclose(chunks: AsyncIterator[bytes]) -> None:
    close = getattr(chunks, "aclose", None)  # an async generator's; a plain iterator has none
    if close is not None:
        await close()


class Unsatisfiable(Exception):
    """The range asks for no byte of the file: 416."""


def etag_of(key: str, size: int) -> str:
    return '"' + hashlib.sha256(f"{key}:{size}".encode()).hexdigest()[:32] + '"'


def none_match(header: str | None, etag: str) -> bool:
    """True when `If-None-Match` names this ETag (weak comparison, as RFC 9110 asks) or is `*`."""
    if header is None:
        return False
    tags = [tag.strip().removeprefix("W/") for tag in header.split(",")]
    return "*" in tags or etag in tags


def byte_range(header: str, size: int) -> tuple[int, int] | None:
    """(first, last) byte of the one range asked for, clamped to the file; None for the whole file.
    Raises Unsatisfiable when the range holds no byte of it."""
    match = _RANGE.fullmatch(header.strip())
    if match is None:
        return None
    first, last = match.groups()
    if not first:  # bytes=-N: the last N bytes
        if not last:
            return None
        if int(last) == 0 or size == 0:
            raise Unsatisfiable
        return max(0, size - int(last)), size - 1
    start = int(first)
    if last and int(last) < start:
        return None  # not a valid range: ignored
    if start >= size:
        raise Unsatisfiable
    return start, min(int(last), size - 1) if last else size - 1


async def send_file(request: web.Request, store: FileStore, key: str,
                    headers: dict[str, str]) -> web.StreamResponse:
    """The file at `key` with `headers` (type, disposition, cache, CSP…), whole or one range; HEAD
    gets the same headers and no body. Raises FileNotFoundError when the store has no such file."""
    size = await store.size(key)
    etag = etag_of(key, size)
    headers = {**headers, "ETag": etag, "Accept-Ranges": "bytes"}
    if none_match(request.headers.get("If-None-Match"), etag):
        return web.Response(status=304, headers=headers)
    span = None
    if_range = request.headers.get("If-Range")
    if "Range" in request.headers and (if_range is None or if_range.strip() == etag):
        try:
            span = byte_range(request.headers["Range"], size)
        except Unsatisfiable:
            return web.Response(status=416, text="range not satisfiable", headers={
                "Content-Range": f"bytes */{size}", "X-Content-Type-Options": "nosniff"})
    first, last = span if span is not None else (0, size - 1)
    resp = web.StreamResponse(status=200 if span is None else 206, headers=headers)
    if span is not None:
        resp.headers["Content-Range"] = f"bytes {first}-{last}/{size}"
    resp.content_length = last - first + 1
    await resp.prepare(request)
    if request.method == "HEAD":
        return resp
    try:
        chunks = store.chunks(key, first, last + 1)
        try:
            async for chunk in chunks:
                await resp.write(chunk)
        finally:  # the file is closed now, also when the reader goes away mid-file
            await aclose(chunks)
        await resp.write_eof()
    except ConnectionResetError:  # the reader went away (aiohttp's reset error is one)
        log.debug("file download closed by the reader")
    return resp
