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
- Form: the body is split as `urllib.parse.parse_qsl(keep_blank_values=True, errors="strict")`
  does (`parse_form`, checked against it by the tests), without its per-field overhead: it cost
  more than the HMAC.
- Account: a form whose `AccountSid` is not TWILIO_ACCOUNT_SID (or has none) is refused (403),
  signature or not: another account's webhooks pointed at this bot are not its users' messages.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Iterator
from urllib.parse import unquote_to_bytes, urlparse

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


def parse_form(text: str) -> list[tuple[str, str]]:
    """The (name, value) pairs of a urlencoded form, as `parse_qsl(text, keep_blank_values=True,
    errors="strict")` gives them: UnicodeDecodeError when an escape is not UTF-8."""
    if _ESCAPED_SEPARATOR.search(text) is None:
        # No `&` or `=` hides in an escape: the body is decoded whole, then split. Valid UTF-8 fields
        # joined by ASCII are valid, and one invalid field makes the whole invalid, as parse_qsl.
        text = _unquote_plus(text)
        return [(name, value) for name, _, value in (item.partition("=") for item in text.split("&") if item)]
    pairs = []
    for item in text.split("&"):
        if item:
            name, _, value = item.partition("=")
            pairs.append((_unquote_plus(name), _unquote_plus(value)))
    return pairs


_ESCAPED_SEPARATOR = re.compile("%(?:26|3[dD])")


def _unquote_plus(text: str) -> str:
    if "+" in text:
        text = text.replace("+", " ")
    # A str decoded from UTF-8 round-trips, so its escapes decoded together with it are refused
    # exactly when parse_qsl's runs of escapes are.
    return unquote_to_bytes(text).decode("utf-8") if "%" in text else text


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
        # hmac.digest: OpenSSL's one-shot HMAC, without the two hash objects hmac.new builds.
        mac = hmac.digest(key, candidate.encode("utf-8") + params, hashlib.sha1)
        if hmac.compare_digest(base64.b64encode(mac), expected):
            return True
    return False


def account_matches(form: MultiDict[str], account_sid: str) -> bool:
    return bool(account_sid) and form.get("AccountSid", "") == account_sid
