"""An answer sent while the model is still writing it (WhatsApp), as WHATSAPP_STREAM says.

The model's text arrives in small chunks. A paragraph is complete once a blank line follows it.
A paragraph shorter than STREAM_MIN_CHARS waits and goes with the next one (a row of one-line
messages reads worse than one message); a blank line inside a code block is no boundary. Pieces go
out through the same send path as any reply (formatting, parts, outbox, idempotency keys).
- `paragraphs`: each completed paragraph goes out at once as a message of its own.
- `auto` (the default): paragraphs are held and merged, a message leaving only when the next
  paragraph would take it past 1,600 characters (Twilio's limit for one WhatsApp message), or at
  the end: an answer leaves in as few messages as fit, one for most answers, each full one while
  the model still writes the rest. Each message is billed: before, the first paragraph also went at
  once on its own, which made most answers of a few paragraphs two messages instead of one.
- `whole`: nothing is streamed (bot handlers send the answer at its end, parts of 1,600 at most).
What was not sent when the model's call ends goes with the loop's full `text` event (`rest`), so
nothing is sent twice.

The sends run in a task of their own, in order, each after Twilio reported the previous one sent,
as the parts of one reply do: Twilio does not keep separate messages in order. That task runs
without the turn's database session (`sending(session=None)`): the turn uses it meanwhile
(charging the call, saving history), and one session must not be used by two tasks at once.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bot.channel import formatting
from bot.channel.outbound import sending, wait_sent
from bot.services import Services

# About two lines on a phone: shorter paragraphs are joined with the next one.
STREAM_MIN_CHARS = 200
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_FENCE = "```"
MODES = ("auto", "paragraphs", "whole")


def _sent_length(piece: str) -> int:
    """The length of `piece` as it leaves (WhatsApp formatting changes it)."""
    return len(formatting.to_whatsapp(piece))


def message_count(channel: str, text: str) -> int:
    """How many messages `text` leaves in on `channel` (the parts the send path cuts it into)."""
    if channel == "whatsapp":
        return len(formatting.whatsapp_parts(formatting.to_whatsapp(text)))
    return len(formatting.sms_parts(formatting.to_sms(text)))


@dataclass
class ParagraphSplitter:
    """Cuts streamed text into completed paragraphs of at least `min_chars` characters. With
    `merge_to`, only the first one goes at once (unless `early` is false): the next ones are held
    and handed out together when the following paragraph would take them past `merge_to`."""

    min_chars: int = STREAM_MIN_CHARS
    merge_to: int | None = None
    early: bool = True
    text: str = ""  # everything streamed so far
    handed: int = 0  # text[:handed] was handed out
    scanned: int = 0  # the blank lines before this position were looked at
    fits: tuple[int, int] | None = None  # (start, end) of the last blank line text[handed:start] fits before

    def feed(self, chunk: str) -> list[str]:
        """Adds a chunk; returns the pieces completed by it, in order (often none)."""
        self.text += chunk
        ready: list[str] = []
        for blank in _BLANK_LINE.finditer(self.text, self.scanned):
            self.scanned = blank.end()
            piece = self.text[self.handed : blank.start()]
            # An odd number of fences: the blank line is inside a code block.
            if piece.count(_FENCE) % 2 or len(piece.strip()) < self.min_chars:
                continue
            if self.merge_to is None or (self.early and not self.handed):
                ready.append(self._hand(blank.start(), blank.end()))
            else:
                ready += self._merge(blank.start(), blank.end())
        return ready

    def _hand(self, start: int, end: int) -> str:
        piece = self.text[self.handed : start].strip()
        self.handed, self.fits = end, None
        return piece

    def _merge(self, start: int, end: int) -> list[str]:
        """At a paragraph's end: what is held goes out once this paragraph no longer fits with it."""
        assert self.merge_to is not None
        ready: list[str] = []
        if _sent_length(self.text[self.handed : start].strip()) > self.merge_to and self.fits is not None:
            ready.append(self._hand(*self.fits))
        if _sent_length(self.text[self.handed : start].strip()) <= self.merge_to:
            self.fits = (start, end)
        else:  # one paragraph past the limit on its own: it goes now, the send path splits it
            ready.append(self._hand(start, end))
        return ready

    def rest(self, full: str) -> str:
        """What of `full` (the call's whole text, as the loop's event gives it) was not handed out."""
        full = full.strip()
        handed = self.text[: self.handed].strip()
        if handed and full.startswith(handed):
            return full[len(handed) :].strip()
        # Nothing handed out, or another text than the one streamed (a fallback notice): all of it.
        return full


class StreamedReply:
    """Sends an answer's completed paragraphs while it streams; `on_text` is the loop's callback."""

    def __init__(self, services: Services, send: Callable[[str], Awaitable[Any]],
                 min_chars: int = STREAM_MIN_CHARS, mode: str = "paragraphs") -> None:
        self.services = services
        self._send = send
        self._min_chars = min_chars
        self._merge_to = formatting.WHATSAPP_MAX if mode == "auto" else None
        self._splitter = self._new_splitter()
        self._waiting: deque[str] = deque()
        self._task: asyncio.Task[None] | None = None
        self._last: Any = None  # the SendResult of the last streamed message
        self.streamed = 0  # pieces sent while the model was writing, in this turn
        self.messages = 0  # the WhatsApp messages they took (a piece past 1,600 characters takes more)

    def _new_splitter(self) -> ParagraphSplitter:
        """One per model call; merging (`auto`), nothing goes early: as few messages as fit."""
        return ParagraphSplitter(self._min_chars, self._merge_to, early=False)

    def on_text(self, chunk: str) -> bool:
        """Called with each piece of the model's text as it streams; never waits. True once some
        of this call's text is on its way to the user (a cut stream must not be asked again)."""
        self._waiting.extend(self._splitter.feed(chunk))
        if self._waiting and self._idle():
            # The task copies the context as it is created: it starts without the turn's session.
            with sending(session=None):
                self._task = asyncio.get_running_loop().create_task(self._run())
        return self._splitter.handed > 0

    @property
    def sending(self) -> bool:
        """Whether pieces are being sent now (`rest` waits for them)."""
        return self._task is not None and not self._task.done()

    def _idle(self) -> bool:
        """No send under way, and none failed (a failure is raised by `rest`; nothing more goes)."""
        task = self._task
        return task is None or (task.done() and not task.cancelled() and task.exception() is None)

    async def _run(self) -> None:
        while self._waiting:
            piece = self._waiting.popleft()
            await self._after_last()
            self._last = await self._send(piece)
            self.streamed += 1
            self.messages += message_count("whatsapp", piece)

    async def _after_last(self) -> None:
        """Waits until Twilio reported the last streamed message sent (at most OUTBOUND_PART_WAIT_S)."""
        sids = getattr(self._last, "sids", None)
        if sids:
            await wait_sent(self.services, sids[-1], "queued")

    async def rest(self, full: str) -> str:
        """Once the paragraphs under way are sent, what of `full` (the step's text event) is still
        to send; then starts over for the next model call."""
        task, self._task = self._task, None
        if task is not None:
            await task
        await self._after_last()
        self._last = None
        rest = self._splitter.rest(full)
        self._splitter = self._new_splitter()
        return rest

    def cancel(self) -> None:
        """Stops sending (the turn ended without reaching `rest`)."""
        task, self._task = self._task, None
        if task is None:
            return
        if not task.done():
            task.cancel()
        elif not task.cancelled():
            task.exception()  # retrieved: the turn's own error is the one reported
