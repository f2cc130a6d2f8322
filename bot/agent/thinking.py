"""A reasoning model's thinking, kept out of its answer.

vLLM serving Qwen3 or DeepSeek-R1 without a reasoning parser streams the model's thinking as ordinary
`content`, between `<think>` and `</think>` (tests/agent/corpus/sse, stream 20). That text is not
for the user, nor for the history sent back to the model: `ThinkFilter` takes it out as the stream
comes, a tag cut across chunks (`<thi` + `nk>`) included; a block still open when the stream ends is
thinking to its end. `strip_thinking` does the same to a whole text (rows saved before the filter).

DeepSeek-R1's chat template opens the block itself, so its content has a `</think>` and no
`<think>`: what came before that tag is only known to be thinking once the tag arrives. The tag is
never shown, and `lone_close_at` says where the answer starts, so the whole answer (the SMS, the
history, the text the loop hands on) is cut there; what a stream showed before it is gone already.
"""

from __future__ import annotations

from dataclasses import dataclass

OPEN, CLOSE = "<think>", "</think>"

__all__ = ["CLOSE", "OPEN", "ThinkFilter", "strip_thinking"]


def _held(text: str, tag: str) -> int:
    """How many characters at the end of `text` may be the start of `tag` (kept for the next chunk)."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0


@dataclass
class ThinkFilter:
    """Splits streamed content into the answer and the thinking; `feed` returns the answer's new text."""

    inside: bool = False
    thinking: str = ""
    opened: bool = False  # a <think> was seen
    shown: int = 0  # characters of answer handed out so far
    lone_close_at: int | None = None  # where in the answer a </think> without <think> was
    _pending: str = ""  # the end of the last chunk, which may be the start of a tag

    def feed(self, chunk: str) -> str:
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

    def close(self) -> str:
        """At the end of the stream: the answer's last text held back (a lone `<` is no tag)."""
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
