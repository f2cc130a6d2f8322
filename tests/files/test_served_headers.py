"""Files are served so that an uploaded page or picture never runs script on the bot's domain."""

from __future__ import annotations

import pytest

from bot.channel.links import file_path
from tests.support.harness import Harness
from tests.support.stored import stored_file

# One backend: the database only holds the file; the document does not depend on it.
pytestmark = pytest.mark.one_backend

PHONE = "+2250700000090"
PAGE = b"<!doctype html><html><body><script>fetch('/files/1').then(r => r.text())</script></body></html>"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.domain)</script></svg>'

DOWNLOADED = [
    ("page.html", "text/html", PAGE),
    ("page.html", "text/html; charset=utf-8", PAGE),
    ("dessin.svg", "image/svg+xml", SVG),
    ("page.xhtml", "application/xhtml+xml", PAGE),
    ("notes.xml", "text/xml", b"<?xml version='1.0'?><a/>"),
    ("script.js", "application/javascript", b"alert(1)"),
    ("notes.txt", "text/plain", b"bonjour"),
    ("inconnu.bin", "application/octet-stream", PAGE),
    ("page.htm", "TEXT/HTML", PAGE),
]
OOXML = "application/vnd.openxmlformats-officedocument"
SHOWN = [
    ("cours.pdf", "application/pdf", b"%PDF-1.4\n%%EOF"),
    ("photo.png", "image/png", b"\x89PNG\r\n\x1a\n"),
    ("photo.jpg", "image/jpeg", b"\xff\xd8\xff\xe0"),
    ("photo.webp", "image/webp", b"RIFF\x00\x00\x00\x00WEBP"),
    ("anim.gif", "image/gif", b"GIF89a"),
    ("devoir.docx", f"{OOXML}.wordprocessingml.document", b"PK\x03\x04"),
    ("budget.xlsx", f"{OOXML}.spreadsheetml.sheet", b"PK\x03\x04"),
    ("cours.pptx", f"{OOXML}.presentationml.presentation", b"PK\x03\x04"),
]


@pytest.mark.parametrize(("name", "mime", "data"), DOWNLOADED)
async def test_risky_types_are_downloads_in_a_sandbox(harness: Harness, name: str, mime: str,
                                                      data: bytes) -> None:
    h = harness
    user = await h.make_user(PHONE)
    row = await stored_file(h, user.id, name, mime, data)
    path = file_path(h.settings, row)
    for method in ("GET", "HEAD"):
        status, headers, body = await h.get(path, method)
        assert status == 200
        assert headers["Content-Disposition"].startswith("attachment; filename=")
        assert headers["Content-Security-Policy"] == "sandbox"
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Content-Type"].split(";")[0].lower() == mime.split(";")[0].lower()
        assert body == (data if method == "GET" else b"")


@pytest.mark.parametrize(("name", "mime", "data"), SHOWN)
async def test_documents_and_pictures_open_in_the_browser(harness: Harness, name: str, mime: str,
                                                          data: bytes) -> None:
    h = harness
    user = await h.make_user(PHONE)
    row = await stored_file(h, user.id, name, mime, data)
    status, headers, body = await h.get(file_path(h.settings, row))
    assert status == 200 and body == data
    assert headers["Content-Type"] == mime
    assert headers["Content-Disposition"].startswith("inline; filename=")
    assert "Content-Security-Policy" not in headers
    assert headers["X-Content-Type-Options"] == "nosniff"


async def test_an_html_page_declared_as_a_picture_is_not_sniffed(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    row = await stored_file(h, user.id, "photo.png", "image/png", PAGE)
    status, headers, body = await h.get(file_path(h.settings, row))
    assert status == 200 and body == PAGE
    assert headers["Content-Type"] == "image/png" and headers["X-Content-Type-Options"] == "nosniff"


async def test_a_bad_link_serves_nothing(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    row = await stored_file(h, user.id, "page.html", "text/html", PAGE)
    path = file_path(h.settings, row)
    status, _headers, body = await h.get(path[:-1] + "x")
    assert status == 404 and PAGE not in body
