"""Server-sent events from OpenAI-compatible chat completions, and the assembly of their chunks.

Providers disagree on the details, so the rules here follow the SSE spec and what real streams
show (see tests/agent/test_corpus.py): comment lines are keep-alives, CRLF and CR end lines like LF,
several `data:` lines make one event, an `event: error` or an `error` object can arrive mid-stream,
and a stream may end at EOF without `[DONE]`. Tool-call fragments are joined by `index`; a missing
index, a repeated full id, an empty-string name and several fragments of one call in the same delta
are all handled. Ids that are missing or repeated are repaired by `repair_ids` before execution.
`content` is the text as the provider sent it; `answer` is that text without the model's `<think>`
blocks, whose text is `thinking` (bot.agent.thinking): only `answer` is shown, or kept.
"""

from __future__ import annotations

import codecs
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from bot.agent.thinking import ThinkFilter, implicit_thinking

_UTF8 = codecs.getincrementaldecoder("utf-8")


def _loads(data: str) -> Any:
    """One chunk's JSON: orjson (several times faster, and every answer is dozens of chunks), then
    json for what orjson refuses and json takes (NaN, integers past 64 bits, lone surrogates)."""
    try:
        return orjson.loads(data)
    except ValueError:
        return json.loads(data)


@dataclass
class SSEEvent:
    event: str
    data: str


class SSEParser:
    """Incremental SSE framing: feed bytes, get complete events; `close()` flushes at EOF."""

    def __init__(self) -> None:
        self._buf = ""
        # Keeps an incomplete UTF-8 sequence for the next chunk instead of mangling it.
        self._decoder = _UTF8(errors="replace")
        self._data: list[str] = []
        self._event = ""
        self.comment_lines = 0
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        return self._text(self._decoder.decode(chunk))

    def _text(self, text: str) -> list[SSEEvent]:
        if not text:
            return []
        if self._pending_cr and text[0] == "\n":  # a CRLF split across two chunks
            text = text[1:]
        self._pending_cr = text.endswith("\r")
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        self._buf += text
        if "\n" not in text:
            return []
        lines = self._buf.split("\n")
        self._buf = lines.pop()
        events: list[SSEEvent] = []
        data = self._data
        for line in lines:
            # The two lines of nearly every event, handled here: a method call per line showed
            # when hundreds of streams end at once.
            if line.startswith("data:"):
                data.append(line[6:] if line.startswith("data: ") else line[5:])
                continue
            if not line and data and not self._event:
                events.append(SSEEvent("message", "\n".join(data)))
                data.clear()
                continue
            event = self._line(line)
            data = self._data
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[SSEEvent]:
        events = self._text(self._decoder.decode(b"", final=True))
        if self._buf:
            event = self._line(self._buf)
            self._buf = ""
            if event is not None:
                events.append(event)
        # A stream cut without the final blank line still delivers its last event.
        event = self._line("")
        if event is not None:
            events.append(event)
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if line == "":
            if not self._data:
                self._event = ""
                return None
            event = SSEEvent(self._event or "message", "\n".join(self._data))
            self._data, self._event = [], ""
            return event
        if line.startswith(":"):
            self.comment_lines += 1
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str

    def as_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass
class _Slot:
    id: str = ""
    name: str = ""
    arguments: str = ""


def _complete_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@dataclass
class StreamResult:
    """What one streamed completion assembled to."""

    content: str = ""  # as sent, thinking included
    answer: str = ""  # the content without its think blocks
    reasoning: str = ""  # the `reasoning` / `reasoning_content` fields
    thinking: str = ""  # the text of the think blocks in content
    finish_reasons: list[str] = field(default_factory=list)
    errors: list[Any] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    done_seen: bool = False
    comment_lines: int = 0
    model: str = ""
    _slots: list[_Slot] = field(default_factory=list)
    _by_index: dict[Any, int] = field(default_factory=dict)

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [ToolCall(s.id, s.name, s.arguments) for s in self._slots if s.name or s.id or s.arguments]

    @property
    def finish_reason(self) -> str | None:
        return self.finish_reasons[-1] if self.finish_reasons else None


class Assembler:
    """Folds parsed chunks into a StreamResult; `add` returns the new visible text, if any."""

    def __init__(self, model: str = "") -> None:
        self.result = StreamResult()
        self._think = ThinkFilter()
        if implicit_thinking(model):  # the model asked for (bot.agent.thinking)
            self._think.wait()

    def finish(self) -> StreamResult:
        """The stream ended (or broke off): what the think filter held back is placed."""
        result = self.result
        cut = result.finish_reason in (None, "length")  # a thought still held was never closed
        result.answer = self._think.answer_of(result.answer + self._think.close(cut=cut))
        result.thinking += self._think.thinking
        self._think.thinking = ""
        return result

    def add_event(self, event: SSEEvent) -> str:
        data = event.data.strip()
        if data == "[DONE]":
            self.result.done_seen = True
            return ""
        if not data:
            return ""
        try:
            chunk = _loads(data)
        except ValueError:
            if event.event == "error":
                self.result.errors.append({"message": data})
            return ""
        if not isinstance(chunk, dict):
            return ""
        if event.event == "error" and "error" not in chunk:
            self.result.errors.append(chunk)
        return self.add(chunk)

    def add(self, chunk: dict[str, Any]) -> str:
        result = self.result
        if chunk.get("error"):
            result.errors.append(chunk["error"])
        if chunk.get("usage"):
            result.usage = chunk["usage"]
        if chunk.get("model") and not result.model:
            result.model = str(chunk["model"])
            if implicit_thinking(result.model):  # as the server names it
                self._think.wait()
        text = ""
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                continue
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str) and content:
                result.content += content
                shown = self._think.feed(content)
                result.answer += shown
                text += shown
            for key in ("reasoning_content", "reasoning"):
                value = delta.get(key)
                if isinstance(value, str):
                    result.reasoning += value
                    if value:  # the server keeps the thinking apart: held content is answer
                        released = self._think.release()
                        result.answer += released
                        text += released
                    break
            for fragment in delta.get("tool_calls") or []:
                if isinstance(fragment, dict):
                    self._fragment(fragment)
            if choice.get("finish_reason"):
                result.finish_reasons.append(str(choice["finish_reason"]))
        return text

    def _fragment(self, fragment: dict[str, Any]) -> None:
        result = self.result
        function = fragment.get("function") or {}
        frag_id = fragment.get("id") or ""
        name = function.get("name") or ""
        args = function.get("arguments")
        if args is not None and not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        args = args or ""
        index = fragment.get("index")
        slot: _Slot | None = None
        if index is None:
            # No index (Gemini, Mistral): an id or a name starts a call, anything else continues one.
            last = result._slots[-1] if result._slots else None
            if last is not None and not (frag_id or name):
                slot = last
            elif last is not None and frag_id and frag_id == last.id:
                slot = last
        else:
            pos = result._by_index.get(index)
            if pos is not None:
                slot = result._slots[pos]
                # A different id on a finished call at the same index is a new call (Ollama, SGLang).
                if (
                    frag_id
                    and slot.id
                    and frag_id != slot.id
                    and slot.name
                    and _complete_json(slot.arguments)
                ):
                    slot = None
        if slot is None:
            slot = _Slot()
            result._slots.append(slot)
            if index is not None:
                result._by_index[index] = len(result._slots) - 1
        if frag_id:
            slot.id = frag_id  # a repeated full id replaces, never appends
        if name:
            slot.name = name
        slot.arguments += args


def parse_bytes(body: bytes | Iterable[bytes]) -> StreamResult:
    """Assembles a whole recorded stream (tests and tools that replay captures)."""
    parser = SSEParser()
    assembler = Assembler()
    chunks = [body] if isinstance(body, bytes) else body
    for chunk in chunks:
        for event in parser.feed(chunk):
            assembler.add_event(event)
    for event in parser.close():
        assembler.add_event(event)
    assembler.result.comment_lines = parser.comment_lines
    return assembler.finish()


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def repair_ids(calls: list[ToolCall], taken: set[str] | None = None) -> list[ToolCall]:
    """Gives every call a unique id: missing ones are created, repeated ones rewritten.

    `taken` holds ids already used in the conversation (some providers restart at "call_0" on every
    response, and providers reject a request whose history repeats a tool_call_id); it is updated.
    """
    taken = taken if taken is not None else set()
    repaired: list[ToolCall] = []
    for call in calls:
        call_id = call.id.strip()
        if not call_id or call_id in taken:
            call_id = new_call_id()
        taken.add(call_id)
        repaired.append(ToolCall(call_id, call.name, call.arguments))
    return repaired
