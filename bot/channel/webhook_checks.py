"""The checks a Twilio webhook passes before anything of it is stored, cheapest first.

- Size: a body over WEBHOOK_MAX_BYTES is refused (413) as soon as that is known, from its
  Content-Length or, for a chunked body, at the chunk that crosses it; the rest is never buffered.
- Fields: more than MAX_FIELDS form fields is refused (413) before any parsing or signing; Twilio
  sends fewer than 100, and the cost of both grows with the count.
- Signature: `X-Twilio-Signature` is HMAC-SHA1(auth token, URL + each name+value, sorted). The
  sorted names and values are joined once; each distinct URL Twilio may have signed (the exact
  public URL first, then what twilio's RequestValidator.validate also tries: without the port, and
  with the scheme's default port) is MAC'd at most once, and only until one matches. A genuine
  request costs one HMAC; one that matches nothing, one per distinct variant (two).
- Account: a form whose `AccountSid` is not TWILIO_ACCOUNT_SID (or has none) is refused (403),
  signature or not: another account's webhooks pointed at this bot are not its users' messages.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterator
from urllib.parse import urlparse

from aiohttp import web
from multidict import MultiDict
from twilio.request_validator import add_port, remove_port

MAX_FIELDS = 200


def too_large(text: str) -> web.Response:
    """A 413 that ends the connection once sent (what is left of the body is read off, not kept)."""
    response = web.Response(status=413, text=text)
    response.force_close()
    return response


async def refuse_unread(request: web.Request, text: str) -> web.Response:
    """A 413 sent at once, then the connection closed: the rest of the body is never read (aiohttp
    would otherwise read it off, up to its lingering time, to keep the connection usable)."""
    response = too_large(text)
    await response.prepare(request)
    await response.write_eof()
    if request.protocol is not None:
        request.protocol.force_close()
    return response


async def read_capped(request: web.Request, cap: int) -> bytes | None:
    """The whole body, or None as soon as it is known to be over `cap` bytes."""
    declared = request.content_length
    if declared is not None and declared > cap:
        return None
    chunks: list[bytes] = []
    size = 0
    while chunk := await request.content.readany():
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def field_count(raw: bytes) -> int:
    """How many fields a form body has at most (what `parse_qsl` would split), without parsing it."""
    return raw.count(b"&") + 1 if raw else 0


def url_variants(url: str) -> Iterator[str]:
    """The URLs Twilio may have signed, each once: `url` itself, then those `validate` tries."""
    yield url  # a genuine request matches here: the variants are not even parsed
    parsed = urlparse(url)
    seen = {url}
    for candidate in (remove_port(parsed), add_port(parsed)):
        if candidate not in seen:
            seen.add(candidate)
            yield candidate


def _signed_params(form: MultiDict[str]) -> bytes:
    # As RequestValidator.compute_signature: names sorted, each name's distinct values sorted,
    # which is the distinct (name, value) pairs sorted.
    return "".join([name + value for name, value in sorted(set(form.items()))]).encode("utf-8")


def signature_matches(token: str, url: str, form: MultiDict[str], signature: str) -> bool:
    """Whether `signature` is Twilio's for this form at `url` or one of its port variants."""
    params = _signed_params(form)
    expected = signature.encode("utf-8", "replace")
    key = token.encode("utf-8")
    for candidate in url_variants(url):
        mac = hmac.new(key, candidate.encode("utf-8") + params, hashlib.sha1)
        if hmac.compare_digest(base64.b64encode(mac.digest()), expected):
            return True
    return False


def account_matches(form: MultiDict[str], account_sid: str) -> bool:
    return bool(account_sid) and form.get("AccountSid", "") == account_sid
