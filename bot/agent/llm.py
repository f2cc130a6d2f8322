"""A streaming client for any OpenAI-compatible `POST {LLM_BASE_URL}/chat/completions`.

One call = one streamed completion, assembled by bot.agent.sse. Failures before any text reached the
caller (429, 5xx, connection errors, a stream that dies or reports an error without producing
anything usable) are retried with backoff, then the fallback models are tried in order. Usage is
taken from the provider when it sends it and estimated otherwise, so every call is counted.

The httpx client runs on the aiohttp transport (httpx-aiohttp): httpcore's own connection pool
spends time quadratic in the number of open connections, which at a few hundred concurrent
conversations cost more CPU than everything else in the loop (see bench/loop).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import httpx
from httpx_aiohttp import HttpxAiohttpClient

from bot.agent import vision
from bot.agent.sse import Assembler, SSEParser, StreamResult, ToolCall
from bot.config import Settings

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


class LLMError(Exception):
    """Every attempt with every model failed; `attempts` says what happened to each."""

    def __init__(self, message: str, attempts: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.attempts = attempts


class ImagesRefused(LLMError):
    """The provider answered that the model takes no image input (HTTP 400 naming images)."""


@dataclass
class LLMResponse:
    content: str
    reasoning: str
    tool_calls: list[ToolCall]
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    usage_estimated: bool
    model: str
    latency_ms: int
    attempts: list[dict[str, Any]] = field(default_factory=list)
    errors: list[Any] = field(default_factory=list)


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None, same_model: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.same_model = same_model


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (about 3.5 characters per token for French and JSON)."""
    return max(1, int(len(text) / 3.5)) if text else 0


def _retry_after(headers: httpx.Headers) -> float | None:
    raw = headers.get("retry-after", "")
    try:
        return float(raw)
    except ValueError:
        return None


class _NoCookies(httpx.Cookies):
    def extract_cookies(self, response: httpx.Response) -> None:
        return None

    def set_cookie_header(self, request: httpx.Request) -> None:
        return None


class LLMClient:
    def __init__(self, settings: Settings, http: httpx.AsyncClient | None = None) -> None:
        self.settings = settings
        self._own_http = http is None
        self.http = http or HttpxAiohttpClient(
            timeout=httpx.Timeout(settings.llm_timeout_s, connect=min(10.0, settings.llm_timeout_s)),
            limits=httpx.Limits(max_connections=1000, max_keepalive_connections=1000),
        )
        if http is None:
            # An API authenticated by key has no use for cookies, and the cookie jar costs a
            # noticeable share of each call's CPU at hundreds of concurrent conversations.
            self.http._cookies = _NoCookies()  # type: ignore[attr-defined]
        self.url = httpx.URL(settings.llm_base_url.rstrip("/") + "/chat/completions")
        self._timeout = httpx.Timeout(
            settings.llm_timeout_s, connect=min(10.0, settings.llm_timeout_s)
        ).as_dict()
        self.calls = 0

    async def close(self) -> None:
        if self._own_http:
            await self.http.aclose()

    def models(self, images: bool = False) -> list[str]:
        """The models to try in order; a request carrying images starts with LLM_VISION_MODEL."""
        seen: list[str] = []
        first = self.settings.llm_model
        if images:
            first = self.settings.llm_vision_model or first
        for m in (first, *self.settings.llm_fallback_models):
            if m and m not in seen:
                seen.append(m)
        return seen

    async def chat(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
        deadline: float | None = None,
        on_text: Callable[[str], Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> LLMResponse:
        """One streamed completion. `deadline` is a time.monotonic() value no retry may pass.

        `on_text` receives text as it streams; once it has been called, a failure is no longer
        retried (the caller has shown part of an answer) and the partial response is returned.
        """
        started = time.monotonic()
        attempts: list[dict[str, Any]] = []
        retries = max(0, self.settings.llm_max_retries)
        images = vision.has_images(list(messages))
        for model in self.models(images):
            for attempt in range(retries + 1):
                body: dict[str, Any] = {
                    "model": model,
                    "messages": list(messages),
                    "stream": True,
                    "stream_options": {"include_usage": True},
                }
                if tools:
                    body["tools"] = list(tools)
                if tool_choice is not None and (tools or tool_choice == "none"):
                    body["tool_choice"] = tool_choice
                if extra:
                    body.update(extra)
                forwarded = [False]
                try:
                    result = await self._stream_once(body, deadline, on_text, forwarded)
                except _Retryable as exc:
                    attempts.append({"model": model, "error": exc.reason})
                    if images and vision.refuses_images(400 if exc.reason.startswith("HTTP 400") else 0,
                                                        exc.reason):
                        # The caller reads the photos' text instead, in the same turn.
                        raise ImagesRefused(f"images refused by {model}", attempts) from None
                    if exc.reason == "deadline":
                        raise LLMError("deadline reached during the model call", attempts) from None
                    if not exc.same_model:
                        break
                    if attempt == retries:
                        break
                    wait = self._backoff(attempt, exc.retry_after)
                    if deadline is not None and time.monotonic() + wait >= deadline:
                        raise LLMError("deadline reached while retrying", attempts) from None
                    await asyncio.sleep(wait)
                    continue
                attempts.append({"model": model, "error": None})
                return self._response(result, body, model, started, attempts)
        raise LLMError(f"all models failed: {attempts[-1]['error'] if attempts else 'none'}", attempts)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        base = self.settings.llm_retry_base_s * (2**attempt)
        wait = base * (0.5 + random.random())
        if retry_after is not None:
            wait = max(wait, min(retry_after, 30.0))
        return wait

    async def _stream_once(
        self,
        body: dict[str, Any],
        deadline: float | None,
        on_text: Callable[[str], Any] | None,
        forwarded: list[bool],
    ) -> StreamResult:
        headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
        if self.settings.llm_api_key:
            headers["Authorization"] = f"Bearer {self.settings.llm_api_key}"
        parser = SSEParser()
        assembler = Assembler()
        self.calls += 1
        timeout = None if deadline is None else max(0.01, deadline - time.monotonic())
        try:
            async with asyncio.timeout(timeout):
                # Built directly rather than through client.stream(): merging the client's defaults
                # (URL, headers, cookies) on every call shows in the CPU time at hundreds of
                # concurrent conversations.
                request = httpx.Request(
                    "POST",
                    self.url,
                    content=json.dumps(body).encode(),
                    headers=headers,
                    extensions={"timeout": self._timeout},
                )
                resp = await self.http.send(request, stream=True)
                try:
                    if resp.status_code != 200:
                        detail = (await resp.aread())[:300].decode("utf-8", "replace")
                        same = resp.status_code in RETRYABLE_STATUS
                        raise _Retryable(
                            f"HTTP {resp.status_code}: {detail}", _retry_after(resp.headers), same
                        )
                    async for raw in resp.aiter_bytes():
                        for event in parser.feed(raw):
                            self._feed(assembler, event, on_text, forwarded)
                    for event in parser.close():
                        self._feed(assembler, event, on_text, forwarded)
                finally:
                    await resp.aclose()
        except TimeoutError:
            if forwarded[0]:
                return self._finish(assembler, parser)
            raise _Retryable("deadline", same_model=False) from None
        except (httpx.TransportError, httpx.StreamError, aiohttp.ClientError, ConnectionError) as exc:
            if forwarded[0]:
                assembler.result.errors.append({"message": f"stream interrupted: {type(exc).__name__}"})
                return self._finish(assembler, parser)
            raise _Retryable(f"connection: {type(exc).__name__}: {exc}") from None
        result = self._finish(assembler, parser)
        usable = result.content.strip() or result.tool_calls
        if result.errors and not usable and not forwarded[0]:
            raise _Retryable(f"error in stream: {json.dumps(result.errors[-1])[:300]}")
        if not usable and not result.done_seen and not result.finish_reasons and not forwarded[0]:
            raise _Retryable("stream ended without any answer")
        return result

    @staticmethod
    def _feed(
        assembler: Assembler, event: Any, on_text: Callable[[str], Any] | None, forwarded: list[bool]
    ) -> None:
        text = assembler.add_event(event)
        if text and on_text is not None:
            forwarded[0] = True
            on_text(text)

    @staticmethod
    def _finish(assembler: Assembler, parser: SSEParser) -> StreamResult:
        assembler.result.comment_lines = parser.comment_lines
        return assembler.result

    @staticmethod
    def _response(
        result: StreamResult, body: dict[str, Any], model: str, started: float, attempts: list[dict[str, Any]]
    ) -> LLMResponse:
        usage = result.usage or {}
        prompt = usage.get("prompt_tokens")
        completion = usage.get("completion_tokens")
        estimated = not isinstance(prompt, int) or not isinstance(completion, int)
        if not isinstance(prompt, int):
            prompt = estimate_tokens(json.dumps(body.get("messages", []), ensure_ascii=False))
        if not isinstance(completion, int):
            completion = estimate_tokens(
                result.content + "".join(c.name + c.arguments for c in result.tool_calls)
            )
        return LLMResponse(
            content=result.content,
            reasoning=result.reasoning,
            tool_calls=result.tool_calls,
            finish_reason=result.finish_reason,
            prompt_tokens=int(prompt),
            completion_tokens=int(completion),
            usage_estimated=estimated,
            model=result.model or model,
            latency_ms=int((time.monotonic() - started) * 1000),
            attempts=attempts,
            errors=result.errors,
        )
