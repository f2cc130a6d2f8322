"""Structured JSON logs carrying the current user, conversation and message ids; phones masked.

One inbound message is followed across processes by the ids every line of its processing carries:
`message_sid` (Twilio's MessageSid) and `inbound_id` (its row), bound by the webhook, then by the
worker that answers it, and by a background job carried on from its turn (with `job_id`).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import re
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import orjson

log_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "log_context", default=None
)

# A phone number as people and systems write it: E.164 with or without the whatsapp: prefix,
# or grouped with spaces (also the narrow ones French text uses), dots or hyphens, with the country
# or area code in parentheses: « +225 07 00 00 00 01 », « +225-07-00-… », « (225) 07 … ».
# Separators are dropped before the digits are counted, so grouping cannot hide a number.
_SEP = r"[ \u00a0\u202f.\-]{1,2}"
_PHONE = re.compile(
    r"(?<![\w])(?!\d{4}-\d{2}-\d{2}(?!\d))"  # not inside a word or number; not an ISO date
    r"(?:\+|\(\+?)?\d+\)?"  # first group: +225, (225), (+225), 07…
    r"(?:(?:" + _SEP + r"|(?<=\)))\(?\d{2,}\)?)*"  # more groups of two digits or more
    r"(?![\w])"
)
_BSUID = re.compile(r"\b([A-Z]{2})\.(\d{3,})(\d{2})\b")
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}
MIN_DIGITS = 7


def _mask_number(match: re.Match[str]) -> str:
    written = match.group(0)
    digits = re.sub(r"\D", "", written)
    if len(digits) < MIN_DIGITS:
        return written
    keep = min(4, len(digits) - 5)
    plus = "+" if written.lstrip("(").startswith("+") else ""
    close = ")" if written.count(")") > written.count("(") else ""  # "f(…)": the caller's bracket
    return f"{plus}{digits[:keep]}{'*' * (len(digits) - keep - 2)}{digits[-2:]}{close}"


_DIGITS = re.compile(r"\d")


def mask(text: str) -> str:
    if _DIGITS.search(text) is None:
        return text  # nothing to mask without a digit: most messages and field values
    text = _PHONE.sub(_mask_number, text)
    return _BSUID.sub(lambda m: f"{m.group(1)}.{'*' * len(m.group(2))}{m.group(3)}", text)


def bind(**fields: Any) -> contextvars.Token[dict[str, Any] | None]:
    """Adds ids to every log line of the current task (and tasks it starts)."""
    return log_context.set({**(log_context.get() or {}), **fields})


def reset(token: contextvars.Token[dict[str, Any] | None]) -> None:
    log_context.reset(token)


@contextlib.contextmanager
def scope(**fields: Any) -> Iterator[None]:
    """Binds `fields` for the block, and whatever `bind` adds inside it, then restores the ids of
    before: a loop or a connection that handles one message after another leaks none into the next."""
    token = bind(**fields)
    try:
        yield
    finally:
        reset(token)


def _masked(value: Any) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(v) for v in value]
    if isinstance(value, int | float | bool) or value is None:
        return value
    return mask(str(value))


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": mask(record.getMessage()),
        }
        entry.update(_masked(log_context.get() or {}))
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = _masked(value)
        if record.exc_info:
            entry["exc"] = mask(self.formatException(record.exc_info))
        # orjson: one line of UTF-8 JSON like json.dumps(ensure_ascii=False), several times faster,
        # and every webhook writes one.
        try:
            return orjson.dumps(entry, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
        except TypeError:  # what orjson refuses (an integer past 64 bits): the standard library's way
            return json.dumps(entry, ensure_ascii=False, default=str)


REPEAT_WINDOW_S = 10.0
_repeats: dict[tuple[str, str], list[float]] = {}  # (logger, message) -> [last written, left out]


def warning_sampled(logger: logging.Logger, message: str, extra: dict[str, Any] | None = None, *,
                    every_s: float = REPEAT_WINDOW_S, now: float | None = None) -> bool:
    """A warning that anyone outside can make us write (a webhook refused before it is checked),
    written at most once per `every_s` for one logger and message: a flood of refusals costs one
    line, not a line each. The line written after a quiet spell says how many were left out before
    it (`repeated`). Their counts stay exact in the metrics. True when the line was written."""
    at = time.monotonic() if now is None else now
    key = (logger.name, message)
    seen = _repeats.get(key)
    if seen is not None and at - seen[0] < every_s:
        seen[1] += 1
        return False
    left_out = int(seen[1]) if seen is not None else 0
    _repeats[key] = [at, 0]
    logger.warning(message, extra={**(extra or {}), **({"repeated": left_out} if left_out else {})})
    return True


def forget_repeats() -> None:
    """Every sampled warning written again at its next occurrence (a test's fresh start)."""
    _repeats.clear()


def setup(level: str = "INFO", stream: Any = None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # alembic.runtime.plugins: a line per plugin alembic loads, on import; nothing an operator reads.
    for noisy in ("aiohttp.access", "twilio.http_client", "twilio.async_http_client", "httpx",
                  "alembic.runtime.plugins"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
