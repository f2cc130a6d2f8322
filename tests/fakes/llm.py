"""A local OpenAI-compatible `/chat/completions` server that plays scripted SSE streams.

It speaks the real wire protocol (`data: {chunk}\\n\\n` … `data: [DONE]`), so the bot's own HTTP
client is exercised end to end. Tests push steps; each request pops one (the default is a short
text answer); `push_raw` replays recorded bytes, `push_chunks` streams the deltas it is given.
Every request body is recorded.

Text streams in chunks of 24 characters; `chunk_delay_s` (for every step, or one step's own) waits
between frames. `.streams` keeps, for each streamed text or tool-call step, the monotonic times of
its first text frame and of its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Step:
    kind: str  # text | tools | raw | status | hang | die
    content: str = ""
    calls: list[tuple[str, Any, str | None]] = field(default_factory=list)  # (name, args, id)
    raw: bytes = b""
    status: int = 200
    body: str = ""
    delay_s: float = 0.0
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    chunk_delay_s: float | None = None  # this step's wait between frames (else FakeLLM.chunk_delay_s)


def _chunk(delta: dict[str, Any], finish: str | None = None, model: str = "fake") -> bytes:
    payload = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"


def _pieces(text: str, size: int = 24) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def render_step(step: Step, model: str = "fake") -> list[bytes]:
    """The SSE frames of a text or tool-call step, as an OpenAI-style provider streams them."""
    frames = [_chunk({"role": "assistant", "content": ""}, model=model)]
    if step.content:
        frames += [_chunk({"content": p}, model=model) for p in _pieces(step.content)]
    for index, (name, args, call_id) in enumerate(step.calls):
        arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        head = {
            "index": index,
            "id": call_id or f"call_{index}_{name}",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        frames.append(_chunk({"tool_calls": [head]}, model=model))
        for piece in _pieces(arguments, 16):
            frames.append(
                _chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}, model=model)
            )
    finish = step.finish_reason or ("tool_calls" if step.calls else "stop")
    frames.append(_chunk({}, finish, model=model))
    usage = step.usage or {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    frames.append(
        b"data: "
        + json.dumps(
            {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [], "usage": usage}
        ).encode()
        + b"\n\n"
    )
    frames.append(b"data: [DONE]\n\n")
    return frames


def image_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The `image_url` content parts of a chat request, in order."""
    parts: list[dict[str, Any]] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            parts += [p for p in content if isinstance(p, dict) and p.get("type") == "image_url"]
    return parts


class FakeLLM:
    def __init__(self) -> None:
        self.steps: deque[Step] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.responder: Callable[[dict[str, Any]], Step] | None = None
        # Called with each request's body as it arrives, before it is answered (what the bot holds then).
        self.on_request: Callable[[dict[str, Any]], None] | None = None
        self.default_text = "D'accord."
        self.chunk_delay_s = 0.0
        # Set: a request carrying image parts gets HTTP 400, as from a model without vision.
        self.refuse_images = False
        self.refused_image_requests = 0
        # Set: every request is refused 401 with the key it carried quoted back, as OpenAI's
        # « Incorrect API key provided: … » quotes it.
        self.refuse_key_quoting_it = False
        self.streams: list[dict[str, float | None]] = []  # {"first_text": t, "ended": t} per stream
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()  # set by `stop`: a hanging answer gives up, as a server going away
        self.url = ""

    # --- scripting -------------------------------------------------------------------------
    def push_text(self, content: str, **kw: Any) -> None:
        self.steps.append(Step("text", content=content, **kw))

    def push_tool_calls(
        self, *calls: tuple[str, Any] | tuple[str, Any, str], content: str = "", **kw: Any
    ) -> None:
        normalised = [(c[0], c[1], c[2] if len(c) > 2 else None) for c in calls]
        self.steps.append(Step("tools", content=content, calls=normalised, **kw))

    def push_raw(self, raw: bytes, **kw: Any) -> None:
        self.steps.append(Step("raw", raw=raw, **kw))

    def push_chunks(self, *deltas: dict[str, Any], **kw: Any) -> None:
        """Streams each delta as a frame of its own, as given (e.g. {"content": "<thi"}, then
        {"content": "nk>"}, or {"reasoning_content": "…"}), then the finish, usage and [DONE]."""
        frames = [_chunk({"role": "assistant", "content": ""})] + [_chunk(d) for d in deltas]
        frames += render_step(Step("text"))[-3:]  # finish "stop", usage, [DONE]
        self.push_raw(b"".join(frames), **kw)

    def push_status(self, status: int, body: str = "", **kw: Any) -> None:
        self.steps.append(
            Step("status", status=status, body=body or json.dumps({"error": {"message": "fake"}}), **kw)
        )

    def push_hang(self, seconds: float = 3600) -> None:
        """No answer for `seconds` (then a 504), or until the server stops."""
        self.steps.append(Step("hang", delay_s=seconds))

    def push_die(self, content: str = "Je commence") -> None:
        """Streams some content, then drops the connection without finishing."""
        self.steps.append(Step("die", content=content))

    # --- server ----------------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        if self.on_request is not None:
            self.on_request(body)
        if self.refuse_key_quoting_it:
            key = request.headers.get("Authorization", "").removeprefix("Bearer ")
            said = f"Incorrect API key provided: {key}. You can find your API key at https://platform.openai.com."
            refused = {"message": said, "type": "invalid_request_error", "code": "invalid_api_key"}
            return web.json_response({"error": refused}, status=401)
        if self.refuse_images and image_parts(body):
            self.refused_image_requests += 1
            error = {"error": {"message": "Invalid content type. image_url is only supported by certain "
                               "models.", "type": "invalid_request_error", "param": "messages",
                               "code": None}}
            return web.Response(status=400, text=json.dumps(error), content_type="application/json")
        if self.responder is not None and not self.steps:
            step = self.responder(body)
        else:
            step = self.steps.popleft() if self.steps else Step("text", content=self.default_text)
        if step.delay_s and step.kind != "hang":
            await asyncio.sleep(step.delay_s)
        if step.kind == "status":
            return web.Response(status=step.status, text=step.body, content_type="application/json")
        if step.kind == "hang":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), step.delay_s)
            return web.Response(status=504)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        if step.kind == "raw":
            await resp.write(step.raw)
            await resp.write_eof()
            return resp
        if step.kind == "die":
            await resp.write(
                _chunk({"role": "assistant", "content": step.content}, model=body.get("model", ""))
            )
            await asyncio.sleep(0.01)
            assert request.transport is not None
            request.transport.close()
            return resp
        times: dict[str, float | None] = {"first_text": None, "ended": None}
        self.streams.append(times)
        delay = self.chunk_delay_s if step.chunk_delay_s is None else step.chunk_delay_s
        for index, frame in enumerate(render_step(step, model=body.get("model", "fake"))):
            if index and delay:
                await asyncio.sleep(delay)
            await resp.write(frame)
            if index == 1 and step.content:  # frame 0 only opens the assistant's message
                times["first_text"] = time.monotonic()
        await resp.write_eof()
        times["ended"] = time.monotonic()
        return resp

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self._stopping.clear()
        app = web.Application()
        app.router.add_post("/chat/completions", self._handle)
        app.router.add_post("/v1/chat/completions", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        sockets = site._server.sockets  # type: ignore[union-attr]
        self.url = f"http://{host}:{sockets[0].getsockname()[1]}"
        return self.url

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()

    # --- inspection ------------------------------------------------------------------------
    def all_request_text(self) -> str:
        """Everything sent to the model, as one string (to check a secret never reached it)."""
        return "\n".join(json.dumps(r, ensure_ascii=False) for r in self.requests)
