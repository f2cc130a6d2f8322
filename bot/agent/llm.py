"""A streaming client for any OpenAI-compatible `POST {LLM_BASE_URL}/chat/completions`.

One call = one streamed completion, assembled by bot.agent.sse. Failures before any text reached the
caller (429, 5xx, connection errors, a stream that dies or reports an error without producing
anything usable) are retried with backoff, then the fallback models are tried in order. Usage is
taken from the provider when it sends it and estimated otherwise, so every call is counted.

At most LLM_MAX_CONCURRENCY calls of one process stream at once: a call waits for a slot, and the
wait counts toward its deadline (a call whose deadline passes while waiting fails as a late one).
Latency, tokens and errors are counted by model (bot.metrics).

The calls go through one aiohttp session per process, used directly: httpcore's own connection
pool spent time quadratic in the number of open connections, and httpx's request and response
models over aiohttp (httpx-aiohttp) still cost about a third of each call's CPU, which shows when
hundreds of conversations get their answers at the same moment (see bench/loop).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from bot import credentials, metrics
from bot.agent import vision
from bot.agent.prompts import PERSONAL_HEADING
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
    cached_tokens: int = 0  # of prompt_tokens, read from the provider's cache (charged less)


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None, same_model: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.same_model = same_model


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (about 3.5 characters per token for French and JSON)."""
    return max(1, int(len(text) / 3.5)) if text else 0


def _retry_after(headers: Any) -> float | None:
    raw = headers.get("retry-after", "")
    try:
        return float(raw)
    except ValueError:
        return None


class _Slot:
    """The concurrency slot as a plain context manager (a generator-based one cost more per call)."""

    __slots__ = ("_semaphore",)

    def __init__(self, semaphore: asyncio.Semaphore) -> None:
        self._semaphore = semaphore

    async def __aenter__(self) -> None:
        if self._semaphore.locked():
            metrics.LLM_WAITS.inc()
        await self._semaphore.acquire()
        metrics.LLM_IN_FLIGHT.inc()

    async def __aexit__(self, *_exc: object) -> None:
        metrics.LLM_IN_FLIGHT.dec()
        self._semaphore.release()


class LLMClient:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.url = settings.llm_base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
        if settings.llm_api_key:
            self._headers["Authorization"] = f"Bearer {settings.llm_api_key}"
        self._session: aiohttp.ClientSession | None = None
        self.calls = 0
        # Bound to the running loop at first use: one client per process and loop (build_services).
        self._slots = asyncio.Semaphore(max(1, settings.llm_max_concurrency))

    def _http(self) -> aiohttp.ClientSession:
        """The session, made in the running loop at the first call. No cookies (an API
        authenticated by key has no use for them) and no connection cap (LLM_MAX_CONCURRENCY is)."""
        if self._session is None or self._session.closed:
            timeout = aiohttp.ClientTimeout(total=None, sock_connect=min(10.0, self.settings.llm_timeout_s),
                                            sock_read=self.settings.llm_timeout_s)
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
                cookie_jar=aiohttp.DummyCookieJar(), timeout=timeout, trust_env=False,
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

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
        cache_key: str | None = None,
        max_tokens: int | None = None,
    ) -> LLMResponse:
        """One streamed completion. `deadline` is a time.monotonic() value no retry may pass.
        `cache_key` (e.g. one per user) goes as `prompt_cache_key` where LLM_PROMPT_CACHE_KEY says so.
        `max_tokens` is sent as min(LLM_MAX_TOKENS, `max_tokens`): what the turn's budget leaves.

        `on_text` receives text as it streams; once it has been called, a failure is no longer
        retried (the caller has shown part of an answer) and the partial response is returned.
        """
        started = time.monotonic()
        attempts: list[dict[str, Any]] = []
        retries = max(0, self.settings.llm_max_retries)
        images = vision.has_images(list(messages))
        for model in self.models(images):
            for attempt in range(retries + 1):
                body = _body(model, messages, tools, tool_choice, extra)
                body["max_tokens"] = self._max_tokens(max_tokens)
                self._cache_hints(body, model, cache_key)
                forwarded = [False]
                try:
                    result = await self._stream_once(body, deadline, on_text, forwarded)
                except _Retryable as exc:
                    attempts.append({"model": model, "error": exc.reason})
                    metrics.LLM_CALLS.labels(model, "error").inc()
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
                response = self._response(result, body, model, started, attempts)
                _count(model, response)
                return response
        raise LLMError(f"all models failed: {attempts[-1]['error'] if attempts else 'none'}", attempts)

    def _max_tokens(self, room: int | None) -> int:
        """LLM_MAX_TOKENS, or less when the caller has only `room` left (never below one)."""
        most = max(1, self.settings.llm_max_tokens)
        return most if room is None else max(1, min(most, room))

    def _cache_hints(self, body: dict[str, Any], model: str, cache_key: str | None) -> None:
        """Tells the provider what it may cache: the stable prefix is the same bytes at every call
        of a mode (bot.agent.prompts), so only the hint differs between providers."""
        host = urlsplit(self.url).hostname or ""
        if cache_key and _wanted(self.settings.llm_prompt_cache_key, host in CACHE_KEY_HOSTS):
            body["prompt_cache_key"] = cache_key[:64]
        anthropic = host == "openrouter.ai" and model.startswith("anthropic/")
        if _wanted(self.settings.llm_cache_control, anthropic):
            body["messages"] = mark_stable_prefix(body["messages"])

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        base = self.settings.llm_retry_base_s * (2.0**attempt)
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
        parser = SSEParser()
        assembler = Assembler(str(body.get("model", "")))
        self.calls += 1
        timeout = None if deadline is None else max(0.01, deadline - time.monotonic())
        payload = _encode(body)
        try:
            async with asyncio.timeout(timeout), self._slot():
                async with self._http().post(self.url, data=payload, headers=self._headers) as resp:
                    if resp.status != 200:
                        detail = (await resp.read())[:300].decode("utf-8", "replace")
                        if resp.status in (401, 403):
                            credentials.refused("the model's API", "LLM_API_KEY (and LLM_BASE_URL)",
                                                f"HTTP {resp.status}: {detail}")
                        same = resp.status in RETRYABLE_STATUS
                        raise _Retryable(f"HTTP {resp.status}: {detail}", _retry_after(resp.headers), same)
                    async for raw in resp.content.iter_any():
                        for event in parser.feed(raw):
                            self._feed(assembler, event, on_text, forwarded)
                    for event in parser.close():
                        self._feed(assembler, event, on_text, forwarded)
        except TimeoutError:
            if forwarded[0]:
                return self._finish(assembler, parser)
            raise _Retryable("deadline", same_model=False) from None
        except (aiohttp.ClientError, ConnectionError) as exc:
            if forwarded[0]:
                assembler.result.errors.append({"message": f"stream interrupted: {type(exc).__name__}"})
                return self._finish(assembler, parser)
            raise _Retryable(f"connection: {type(exc).__name__}: {exc}") from None
        result = self._finish(assembler, parser)
        usable = result.answer.strip() or result.tool_calls
        if result.errors and not usable and not forwarded[0]:
            raise _Retryable(f"error in stream: {json.dumps(result.errors[-1])[:300]}")
        if not usable and not result.done_seen and not result.finish_reasons and not forwarded[0]:
            raise _Retryable("stream ended without any answer")
        return result

    def _slot(self) -> _Slot:
        """One of this process's LLM_MAX_CONCURRENCY slots, held while the call streams."""
        return _Slot(self._slots)

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
        return assembler.finish()

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
            completion = estimate_tokens(  # thinking is written, and paid for, too
                result.content + result.reasoning + "".join(c.name + c.arguments for c in result.tool_calls)
            )
        details = usage.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        cached = min(int(prompt), cached) if isinstance(cached, int) and cached > 0 else 0
        return LLMResponse(
            content=result.answer,  # never the think blocks: they are neither shown nor kept
            reasoning=result.reasoning + result.thinking,
            tool_calls=result.tool_calls,
            finish_reason=result.finish_reason,
            prompt_tokens=int(prompt),
            completion_tokens=int(completion),
            usage_estimated=estimated,
            model=result.model or model,
            latency_ms=int((time.monotonic() - started) * 1000),
            attempts=attempts,
            errors=result.errors,
            cached_tokens=cached,
        )


def _encode(body: dict[str, Any]) -> bytes:
    """The request as UTF-8 JSON. orjson is several times faster than json on the whole history,
    which is sent again at every step; what it refuses (e.g. a non-string key, an integer past 64
    bits) goes through json as before."""
    try:
        return orjson.dumps(body)
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(body, ensure_ascii=False).encode()


def _body(model: str, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
          tool_choice: str | None, extra: dict[str, Any] | None) -> dict[str, Any]:
    """The request body of one streamed completion."""
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
    return body


@dataclass(frozen=True)
class _Children:
    """One model's labelled metrics, looked up once: `.labels()` costs a lock and a tuple each time."""

    ok: Any
    seconds: Any
    prompt: Any
    completion: Any
    cached: Any


_CHILDREN: dict[str, _Children] = {}


def _children(model: str) -> _Children:
    found = _CHILDREN.get(model)
    if found is None:
        found = _CHILDREN[model] = _Children(
            metrics.LLM_CALLS.labels(model, "ok"), metrics.LLM_SECONDS.labels(model),
            metrics.LLM_TOKENS.labels(model, "prompt"), metrics.LLM_TOKENS.labels(model, "completion"),
            metrics.LLM_TOKENS.labels(model, "cached"),
        )
    return found


def _count(model: str, response: LLMResponse) -> None:
    """An answered call in the metrics, under the model asked for (the provider may name a version)."""
    children = _children(model)
    children.ok.inc()
    children.seconds.observe(response.latency_ms / 1000)
    children.prompt.inc(response.prompt_tokens)
    children.completion.inc(response.completion_tokens)
    if response.cached_tokens:
        children.cached.inc(response.cached_tokens)


CACHE_KEY_HOSTS = frozenset({"api.openai.com", "openrouter.ai"})


def prompt_cache_key(secret: str, user_id: int) -> str:
    """One key per user that says nothing of who it is: the provider only groups calls by it."""
    import hashlib
    import hmac

    return "u-" + hmac.new(secret.encode(), f"cache:{user_id}".encode(), hashlib.sha256).hexdigest()[:20]


def _wanted(setting: str, auto: bool) -> bool:
    return setting == "on" or (setting == "auto" and auto)


def mark_stable_prefix(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first system message as two text parts, the stable prefix marked `cache_control`
    (a cache breakpoint: tools and that prefix are cached, what follows is read each time)."""
    if not messages or messages[0].get("role") != "system" or not isinstance(messages[0].get("content"), str):
        return messages
    text = messages[0]["content"]
    cut = text.find("\n\n" + PERSONAL_HEADING)
    stable, rest = (text[:cut], text[cut:]) if cut > 0 else (text, "")
    parts: list[dict[str, Any]] = [{"type": "text", "text": stable, "cache_control": {"type": "ephemeral"}}]
    if rest:
        parts.append({"type": "text", "text": rest})
    return [{**messages[0], "content": parts}, *messages[1:]]
