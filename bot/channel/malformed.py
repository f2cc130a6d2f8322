"""Odd input from outside is a 400 and one log line, never a 500 and a traceback.

What no handler can use is text that cannot be stored or encoded: a NUL (PostgreSQL refuses it in
any text value, « invalid byte sequence for encoding "UTF8": 0x00 ») and bytes that are not UTF-8
(aiohttp hands a header's on as lone surrogates, which neither `str.encode` nor a database driver
takes). It is refused where it comes in, not caught where it breaks, so that a real bug deeper
down still shows as one:

- `refuse_malformed`, the web app's middleware: a request whose path, query or header values hold
  such text gets 400 before any handler runs; so does a handler that finds odd input in what it
  reads and raises `MalformedRequest` (a form by `read_form`, a header it parses itself).
- `read_form`: a page's urlencoded form, strictly UTF-8, each field checked.
- `OneLineParseErrors`: a request aiohttp's own parser cannot read (a raw non-ASCII byte in the
  path, a broken header line) already gets 400 from aiohttp, logged with a traceback as if it were
  our error; this filter makes it one sampled line.

Every refusal is logged with `logs.warning_sampled`: anyone outside can send them, so a flood costs
one line per 10 s, not a line each.
"""

from __future__ import annotations

import logging
import re

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.typedefs import Handler

from bot import logs
from bot.channel import webhook_checks as checks

log = logging.getLogger("bot.channel.malformed")

_UNFIT = re.compile("[\x00\ud800-\udfff]")  # a NUL, or a byte that was not UTF-8 (surrogateescape)
FORM_TYPE = "application/x-www-form-urlencoded"
MAX_FORM_FIELDS = 50  # a page's form has a handful


class MalformedRequest(web.HTTPBadRequest):
    """A request with input no handler can use: answered 400 (by `refuse_malformed`, which logs it;
    by aiohttp itself anywhere else); `what` says what, never echoing the input."""

    def __init__(self, reason: str) -> None:
        super().__init__(text=f"malformed request: {reason}")
        self.what = reason


def unfit(text: str) -> bool:
    """Whether `text` holds a NUL or a byte that was not UTF-8."""
    return _UNFIT.search(text) is not None


def check_request(request: web.Request) -> None:
    """Raises MalformedRequest when the path, the query or a header value holds unfit text."""
    if unfit(request.path):
        raise MalformedRequest("a NUL byte in the path")
    if request.query_string and any(unfit(name) or unfit(value) for name, value in request.query.items()):
        raise MalformedRequest("a NUL byte in the query")
    for name, value in request.headers.items():
        if "\x00" in value or (not value.isascii() and unfit(value)):
            raise MalformedRequest(f"the {name} header is not UTF-8 text")


@web.middleware
async def refuse_malformed(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        check_request(request)
        return await handler(request)
    except MalformedRequest as exc:
        logs.warning_sampled(log, "malformed request refused", {
            "path": request.raw_path[:200], "peer": request.remote, "reason": exc.what})
        return web.Response(status=400, text=exc.text)


async def read_form(request: web.Request, max_bytes: int) -> dict[str, str]:
    """A page's form as its fields (a repeated name: the last value). Only a urlencoded body is a
    form (an empty one for any other type, as a form a browser never sends); a body over
    `max_bytes` is 413; one that is not UTF-8, has too many fields or a field with a NUL is
    MalformedRequest."""
    if (request.content_length or 0) > max_bytes:
        raise web.HTTPRequestEntityTooLarge(max_size=max_bytes, actual_size=request.content_length or 0)
    if request.method != "POST" or request.content_type != FORM_TYPE:
        return {}
    raw = await checks.read_capped(request, max_bytes)
    if raw is None:
        raise web.HTTPRequestEntityTooLarge(max_size=max_bytes, actual_size=max_bytes + 1)
    if (request.charset or "utf-8").lower() != "utf-8" or checks.field_count(raw) > MAX_FORM_FIELDS:
        raise MalformedRequest("not a form of a page")
    try:
        pairs = checks.parse_form(raw.decode("utf-8").rstrip())
    except UnicodeDecodeError:
        raise MalformedRequest("the form is not UTF-8") from None
    if any(unfit(name) or unfit(value) for name, value in pairs):
        raise MalformedRequest("a form field holds a NUL byte")
    return dict(pairs)


class OneLineParseErrors(logging.Filter):
    """On aiohttp's server logger: a request its parser refused (400, already answered) is written
    as one sampled warning instead of « Error handling request » and a traceback. Every other
    record, a handler's exception among them, passes unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if not isinstance(error, HttpProcessingError):
            return True
        reason = (error.message or type(error).__name__).splitlines()[0].strip(" :")[:200]
        logs.warning_sampled(log, "malformed request refused by the HTTP parser",
                             {"reason": reason, "status": error.code})
        return False


def quiet_parse_errors() -> None:
    """Installs OneLineParseErrors on aiohttp's server logger, once per process."""
    server_log = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, OneLineParseErrors) for f in server_log.filters):
        server_log.addFilter(OneLineParseErrors())
