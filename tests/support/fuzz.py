"""Odd input for the fuzz tests (tests/core/test_odd_input.py): hypothesis's strategies for the
text and bytes a stranger may send, a runner that plays each example on the test's own event loop
(where its harness serves), a raw HTTP/1.1 client that sends any byte, and the look at the logs
each answer is checked by: no 500, no traceback, and a 400 said in one warning line."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from itertools import count
from typing import Any, TypeVar
from urllib.parse import quote_from_bytes, quote_plus

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from bot import logs

T = TypeVar("T")

# What broke or might: NUL (PostgreSQL refuses it), digits `isdigit` takes and `int` refuses, a
# letter out of ASCII (`hmac.compare_digest` refuses it in a str), controls, separators of lines,
# of form fields and of cookies, a byte-order mark, right-to-left override, an emoji, quotes.
ODD_CHARS = "\x00\x01\x1f\x7f\x85²٧éÿ\u2028\u202e\ufeff\U0001f600%&=;+,\\\"'<> \t"


def odd_text(max_size: int = 24) -> st.SearchStrategy[str]:
    """Text a person could type or paste, weighted to the odd characters (no lone surrogate: that is
    not text; odd bytes come from `odd_bytes`)."""
    return st.one_of(st.text(alphabet=st.sampled_from(ODD_CHARS), max_size=max_size),
                     st.text(max_size=max_size),
                     st.text(alphabet=st.sampled_from(ODD_CHARS + "abc123@."), max_size=max_size))


def odd_bytes(max_size: int = 24) -> st.SearchStrategy[bytes]:
    """Bytes on the wire, UTF-8 or not."""
    return st.one_of(st.binary(max_size=max_size), odd_text(max_size).map(str.encode))


def header_bytes(max_size: int = 24) -> st.SearchStrategy[bytes]:
    """A header value's bytes: anything but the line's end (which would start another header)."""
    return odd_bytes(max_size).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))


def form_field() -> st.SearchStrategy[bytes]:
    """A urlencoded field's value as sent: text escaped as a browser does, bytes escaped whatever
    they are (`%FF`), or raw bytes as they come."""
    return st.one_of(odd_text().map(lambda t: quote_plus(t).encode()),
                     st.binary(max_size=24).map(lambda b: quote_from_bytes(b, safe="").encode()),
                     odd_bytes().map(lambda b: b.replace(b"&", b"").replace(b"=", b"")))


def path_segment() -> st.SearchStrategy[bytes]:
    """A segment of a path as sent: escaped text or bytes, or raw bytes (the HTTP parser's to refuse)."""
    return st.one_of(odd_text().map(lambda t: quote_from_bytes(t.encode(), safe="").encode()),
                     st.binary(max_size=24).map(lambda b: quote_from_bytes(b, safe="").encode()),
                     header_bytes().map(lambda b: b.translate(None, b" ?#/")))


def form(fields: Sequence[tuple[str, bytes]]) -> bytes:
    return b"&".join(name.encode() + b"=" + value for name, value in fields)


def play(strategy: st.SearchStrategy[T], check: Callable[[T], Coroutine[Any, Any, None]], *,
         max_examples: int = 60, examples: Sequence[T] = ()) -> Awaitable[None]:
    """Runs `check` on `examples`, then on `max_examples` drawn from `strategy`. Hypothesis drives
    from a thread of its own while each check runs on this event loop, where the harness serves.
    Derandomised: a run is the same run on every machine; no shrinking, to stay within the test's
    time (the failing example is printed as drawn)."""
    loop = asyncio.get_running_loop()

    @settings(max_examples=max_examples, deadline=None, database=None, derandomize=True,
              phases=(Phase.explicit, Phase.generate),
              suppress_health_check=(HealthCheck.too_slow, HealthCheck.filter_too_much,
                                     HealthCheck.data_too_large))
    @given(strategy)
    def property_(value: T) -> None:
        asyncio.run_coroutine_threadsafe(check(value), loop).result(timeout=60)

    for value in examples:
        property_ = example(value)(property_)
    return asyncio.to_thread(property_)


# --- raw HTTP ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    head: bytes


_sources = count()


def next_source() -> str:
    """A loopback address of its own for each request: the per-address caps (login throttle, streams)
    stay out of the way of what is being fuzzed."""
    n = next(_sources)
    return f"127.3.{n // 250 % 250}.{n % 250 + 1}"


async def send(base_url: str, line: bytes, headers: Sequence[tuple[bytes, bytes]] = (),
               body: bytes | None = None, *, source: str = "127.0.0.1") -> Answer:
    """One request written byte for byte (`line` is `METHOD target`), its answer's status and head;
    the rest is not waited for (an event stream goes on), the connection closed."""
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port), local_addr=(source, 0))
    try:
        lines = [line + b" HTTP/1.1", f"Host: {host}:{port}".encode(), b"Connection: close",
                 *(name + b": " + value for name, value in headers)]
        if body is not None:
            lines.append(b"Content-Length: %d" % len(body))
        writer.write(b"\r\n".join(lines) + b"\r\n\r\n" + (body or b""))
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    finally:
        writer.close()
    return Answer(int(head.split(b" ", 2)[1]), head)


# --- the logs --------------------------------------------------------------------------------


class LogWatch:
    """The records written since `mark`: a request's, when read as its answer has come."""

    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        self.caplog = caplog
        self.start = 0

    def mark(self) -> None:
        logs.forget_repeats()  # every refusal writes its line: each example's is looked for
        self.start = len(self.caplog.records)

    def since(self) -> list[logging.LogRecord]:
        return self.caplog.records[self.start:]

    def check(self, status: int, what: Any) -> None:
        """No 500, no traceback nor error line; a 400 said in one warning line."""
        assert status != 500 and status > 0, (status, what)
        no_traceback(self.since(), what)
        if status == 400:
            assert [r for r in self.since() if r.levelno == logging.WARNING], ("a 400 without its line", what)


def no_traceback(records: Sequence[logging.LogRecord], what: Any = None) -> None:
    bad = [(r.name, r.getMessage()[:200], repr(r.exc_info[1])[:300] if r.exc_info else None)
           for r in records if r.exc_info or r.levelno >= logging.ERROR]
    assert not bad, (bad, what)
