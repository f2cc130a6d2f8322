"""A local OpenAI-compatible chat-completions server for benchmarks (loopback only).

Stateless: it answers with a tool call while the request holds fewer than `tool_rounds` tool
results, then with text; so every framework driving it does the same number of iterations.
Streams when asked (`stream: true`), answers with plain JSON otherwise.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import sys
from typing import Any


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return (
        b"data: "
        + json.dumps(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "bench",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        ).encode()
        + b"\n\n"
    )


USAGE = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}


def respond(body: bytes, tool_rounds: int) -> bytes:
    """The HTTP response for one request body (a raw HTTP/1.1 message with Content-Length)."""
    request = json.loads(body)
    done = sum(1 for m in request.get("messages", []) if m.get("role") == "tool")
    want_tool = done < tool_rounds and request.get("tools") and request.get("tool_choice") != "none"
    call_id = f"call_{done}"
    args = json.dumps({"a": done, "b": 1})
    if not request.get("stream"):
        message: dict[str, Any] = {"role": "assistant", "content": None if want_tool else "Le total est 42."}
        if want_tool:
            message["tool_calls"] = [
                {"id": call_id, "type": "function", "function": {"name": "add", "arguments": args}}
            ]
        payload = json.dumps(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "created": 0,
                "model": "bench",
                "choices": [
                    {"index": 0, "message": message, "finish_reason": "tool_calls" if want_tool else "stop"}
                ],
                "usage": USAGE,
            }
        ).encode()
        content_type = b"application/json"
    else:
        frames = [_chunk({"role": "assistant", "content": ""})]
        if want_tool:
            frames.append(
                _chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": "add", "arguments": ""},
                            }
                        ]
                    }
                )
            )
            frames.append(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": args}}]}))
            frames.append(_chunk({}, "tool_calls"))
        else:
            frames += [_chunk({"content": "Le total "}), _chunk({"content": "est 42."}), _chunk({}, "stop")]
        frames.append(
            b"data: "
            + json.dumps(
                {
                    "id": "chatcmpl-bench",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": "bench",
                    "choices": [],
                    "usage": USAGE,
                }
            ).encode()
            + b"\n\n"
        )
        frames.append(b"data: [DONE]\n\n")
        payload = b"".join(frames)
        content_type = b"text/event-stream"
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: "
        + content_type
        + b"\r\nContent-Length: "
        + str(len(payload)).encode()
        + b"\r\nConnection: keep-alive\r\n\r\n"
        + payload
    )


class _Protocol(asyncio.Protocol):
    """A minimal keep-alive HTTP/1.1 server: the bench must measure the clients, not the server."""

    def __init__(self, tool_rounds: int, latency_s: float) -> None:
        self.tool_rounds = tool_rounds
        self.latency_s = latency_s
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if len(self.buf) < end + 4 + length:
                return
            body = self.buf[end + 4 : end + 4 + length]
            self.buf = self.buf[end + 4 + length :]
            response = respond(body, self.tool_rounds)
            if self.latency_s:
                asyncio.get_running_loop().call_later(self.latency_s, self._write, response)
            else:
                self._write(response)

    def _write(self, response: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(response)


def _serve(port: int, tool_rounds: int, latency_s: float, ready: Any) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: _Protocol(tool_rounds, latency_s), "127.0.0.1", port, backlog=4096
        )
        ready.set()
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def start_in_process(port: int, tool_rounds: int, latency_s: float) -> multiprocessing.process.BaseProcess:
    """Runs the server in its own process so that its CPU time is not charged to the client."""
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_serve, args=(port, tool_rounds, latency_s, ready), daemon=True)
    proc.start()
    if not ready.wait(20):
        proc.kill()
        sys.exit("benchmark server did not start")
    return proc
