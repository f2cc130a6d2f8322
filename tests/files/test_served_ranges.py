"""`/files/…` streams from the store: one byte range (206, or 416 past the end), an ETag that
answers If-None-Match with 304, and a big file read slowly is never held whole in memory."""

from __future__ import annotations

import asyncio
import os
import tracemalloc

import pytest
from multidict import CIMultiDict

from bot.channel.links import file_path
from tests.support.harness import Harness
from tests.support.stored import stored_file

# One backend: the database only holds the file; the document does not depend on it.
pytestmark = pytest.mark.one_backend

PHONE = "+2250700000091"
DATA = bytes(range(256)) * 4  # 1024 bytes, each position recognisable
PDF = "application/pdf"


async def fetch(h: Harness, path: str, headers: dict[str, str],
                method: str = "GET") -> tuple[int, CIMultiDict[str], bytes]:
    async with h.session.request(method, h.base_url + path, headers=headers) as resp:
        return resp.status, resp.headers.copy(), await resp.read()


async def test_a_range_gets_exactly_those_bytes(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    path = file_path(h.settings, await stored_file(h, user.id, "cours.pdf", PDF, DATA))
    cases = {"bytes=100-199": (100, 199), "bytes=1000-": (1000, 1023), "bytes=-10": (1014, 1023),
             "bytes=1020-5000": (1020, 1023), "bytes=0-0": (0, 0)}
    for header, (first, last) in cases.items():
        status, headers, body = await fetch(h, path, {"Range": header})
        assert status == 206, header
        assert body == DATA[first:last + 1], header
        assert headers["Content-Range"] == f"bytes {first}-{last}/1024"
        assert headers["Content-Length"] == str(last - first + 1)
        assert headers["Content-Type"] == PDF and headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Content-Disposition"].startswith("inline; filename=")
    status, headers, body = await fetch(h, path, {"Range": "bytes=100-199"}, "HEAD")
    assert status == 206 and body == b"" and headers["Content-Range"] == "bytes 100-199/1024"
    # Several ranges, a malformed one, or an If-Range for another version: the whole file.
    for extra in ({"Range": "bytes=0-1,5-6"}, {"Range": "lignes=1-2"}, {"Range": "bytes=9-3"},
                  {"Range": "bytes=1-2", "If-Range": '"autre"'}):
        status, headers, body = await fetch(h, path, extra)
        assert status == 200 and body == DATA and "Content-Range" not in headers, extra
        assert headers["Accept-Ranges"] == "bytes"


async def test_a_range_past_the_end_is_416(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    path = file_path(h.settings, await stored_file(h, user.id, "cours.pdf", PDF, DATA))
    for header in ("bytes=1024-", "bytes=5000-6000", "bytes=-0"):
        status, headers, body = await fetch(h, path, {"Range": header})
        assert status == 416, header
        assert headers["Content-Range"] == "bytes */1024"
        assert DATA not in body and DATA[:16] not in body


async def test_if_none_match_with_the_etag_is_304(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    path = file_path(h.settings, await stored_file(h, user.id, "cours.pdf", PDF, DATA))
    other = file_path(h.settings, await stored_file(h, user.id, "autre.pdf", PDF, DATA))
    status, headers, body = await fetch(h, path, {})
    etag = headers["ETag"]
    assert status == 200 and body == DATA and etag.startswith('"')
    for header in (etag, f'W/{etag}', f'"x", {etag}', "*"):
        status, again, body = await fetch(h, path, {"If-None-Match": header})
        assert status == 304 and body == b"", header
        assert again["ETag"] == etag and again["Cache-Control"] == headers["Cache-Control"]
    status, other_headers, body = await fetch(h, other, {"If-None-Match": etag})
    assert status == 200 and body == DATA and other_headers["ETag"] != etag  # one tag per stored file
    status, _headers, body = await fetch(h, path, {"If-None-Match": '"autre"'})
    assert status == 200 and body == DATA


async def test_a_slow_reader_of_a_big_file_does_not_make_the_server_hold_it(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    data = os.urandom(16 * 1024 * 1024)
    path = file_path(h.settings, await stored_file(h, user.id, "gros.pdf", PDF, data))
    received = 0
    tracemalloc.start()
    try:
        async with h.session.get(h.base_url + path) as resp:
            assert resp.status == 200 and resp.headers["Content-Length"] == str(len(data))
            while chunk := await resp.content.read(64 * 1024):
                assert chunk == data[received:received + len(chunk)]
                received += len(chunk)
                await asyncio.sleep(0.001)  # a slow phone: the server waits, it does not buffer
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert received == len(data)
    # Reading the file whole would take 16 MB at once; chunks and socket buffers stay far below.
    assert peak < 4 * 1024 * 1024, peak
