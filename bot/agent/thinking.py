"""A reasoning model's thinking, kept out of its answer.

vLLM serving Qwen3 or DeepSeek-R1 without a reasoning parser streams the model's thinking as ordinary
`content`, between `<think>` and `</think>` (tests/agent/corpus/sse, stream 20). That text is not
for the user, nor for the history sent back to the model: `ThinkFilter` takes it out as the stream
comes, a tag cut across chunks (`<thi` + `nk>`) included; a block still open when the stream ends is
thinking to its end. `strip_thinking` does the same to a whole text (rows saved before the filter).

DeepSeek-R1's chat template (and QwQ's, and Qwen3's thinking models') opens the block itself, so
the content has a `</think>` and no `<think>`: what comes before that tag is thinking, and it is
only known once the tag arrives. For such a model (`implicit_thinking`, by its name: as asked and
as the server reports it) the filter shows nothing until it knows: a `</think>` (everything before
it was thinking), a `<think>` (the model opens its blocks itself), or a `reasoning` field (the
server keeps the thinking apart, so the content is the answer) ends the wait; a stream that ends
still waiting was the answer, unless it was cut (`finish_reason` "length", or no finish at all),
when it was thinking that never closed. The cost is that such a model's answer is not streamed
when it writes no tag at all. For another model a lone `</think>` still cuts the answer there
(`lone_close_at`: the SMS, the history, the text the loop hands on), though what a stream showed
before it is gone already.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPEN, CLOSE = "<think>", "</think>"

__all__ = ["CLOSE", "OPEN", "ThinkFilter", "implicit_thinking", "strip_thinking"]

# Models whose chat template may open the think block itself (DeepSeek-R1 and its distillations,
# QwQ, Qwen3 and its Thinking-2507 versions, other « …-thinking » models, MiniMax-M1/M2). Qwen3's
# hybrid models write their own <think>, which ends the wait at once; its Instruct and Coder models
# never think.
_IMPLICIT = re.compile(r"(?:^|[^a-z0-9])r1(?:[^a-z0-9]|$)|qwq|qwen3|think|minimax-m[12]")
_NEVER = re.compile(r"instruct|coder")


def implicit_thinking(model: str) -> bool:
    """True when `model` (a name as configured or reported) may think without an opening tag."""
    name = (model or "").lower()
    return bool(_IMPLICIT.search(name)) and not _NEVER.search(name)


def _held(text: str, tag: str) -> int:
    """How many characters at the end of `text` may be the start of `tag` (kept for the next chunk)."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0


@dataclass
class ThinkFilter:
    """Splits streamed content into the answer and the thinking; `feed` returns the answer's new text.
    With `waiting` (a model that may think without an opening tag), nothing is handed out until the
    stream shows whether it is thinking."""

    inside: bool = False
    thinking: str = ""
    opened: bool = False  # a <think> was seen, or the wait ended at a </think>
    shown: int = 0  # characters of answer handed out so far
    lone_close_at: int | None = None  # where in the answer a </think> without <think> was
    waiting: bool = False
    _pending: str = ""  # the end of the last chunk, which may be the start of a tag
    _waited: str = ""  # content held while waiting
    _scanned: int = 0  # _waited[:_scanned] holds no tag
    _fed: bool = False

    def wait(self) -> None:
        """The model may think without an opening tag: hold its content (only before any came)."""
        if not self._fed:
            self.waiting = True

    def release(self) -> str:
        """The server keeps the thinking apart (a reasoning field): what was held is answer."""
        if not self.waiting:
            return ""
        held, self._waited, self.waiting = self._waited, "", False
        return self._split(held)

    def feed(self, chunk: str) -> str:
        self._fed = self._fed or bool(chunk)
        if not self.waiting:
            return self._split(chunk)
        self._waited += chunk
        start = max(0, self._scanned - len(CLOSE))
        opened, closed = self._waited.find(OPEN, start), self._waited.find(CLOSE, start)
        if closed >= 0 and (opened < 0 or closed < opened):
            self.thinking += self._waited[:closed]
            rest = self._waited[closed + len(CLOSE) :]
            self._waited, self.waiting, self.opened = "", False, True
            return self._split(rest)
        if opened >= 0:
            return self.release()
        self._scanned = len(self._waited)
        return ""

    def _split(self, chunk: str) -> str:
        text, self._pending = self._pending + chunk, ""
        shown: list[str] = []
        while text:
            if self.inside:
                at = text.find(CLOSE)
                if at < 0:
                    keep = _held(text, CLOSE)
                    self.thinking += text[: len(text) - keep]
                    self._pending = text[len(text) - keep :]
                    break
                self.thinking += text[:at]
                text, self.inside = text[at + len(CLOSE) :], False
                continue
            opened, closed = text.find(OPEN), text.find(CLOSE)
            if closed >= 0 and (opened < 0 or closed < opened):
                # A closing tag without its opening one (the template opened it): the tag goes, and
                # the answer starts after it.
                shown.append(text[:closed])
                if not self.opened and self.lone_close_at is None:
                    self.lone_close_at = self.shown + sum(len(piece) for piece in shown)
                text = text[closed + len(CLOSE) :]
                continue
            if opened < 0:
                keep = max(_held(text, OPEN), _held(text, CLOSE))
                shown.append(text[: len(text) - keep])
                self._pending = text[len(text) - keep :]
                break
            shown.append(text[:opened])
            text, self.inside, self.opened = text[opened + len(OPEN) :], True, True
        out = "".join(shown)
        self.shown += len(out)
        return out

    def close(self, *, cut: bool = False) -> str:
        """At the end of the stream: the answer's last text held back (a lone `<` is no tag). Still
        waiting, what was held is the answer, or thinking when the stream was `cut` short."""
        if self.waiting:
            if cut:
                self.thinking += self._waited
                self._waited, self.waiting = "", False
                return ""
            held = self.release()
            return held + self.close()
        pending, self._pending = self._pending, ""
        if self.inside:
            self.thinking += pending
            return ""
        self.shown += len(pending)
        return pending

    def answer_of(self, shown: str) -> str:
        """The answer in `shown` (all the text handed out): after a lone `</think>`, the part before
        it joining the thinking."""
        cut = self.lone_close_at
        if cut is None:
            return shown
        self.thinking, self.lone_close_at = shown[:cut] + self.thinking, None
        return shown[cut:]


def strip_thinking(text: str) -> str:
    """`text` without its think blocks (an unclosed one runs to the end)."""
    if OPEN not in text and CLOSE not in text:
        return text
    found = ThinkFilter()
    return found.answer_of(found.feed(text) + found.close())
