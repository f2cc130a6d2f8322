"""Test-only tools, a runner for driving the loop against the FakeLLM server, and `offer`, which
gives a harness's turns test-only tools."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, fields
from typing import Any

from bot.agent.events import LoopEvent
from bot.agent.llm import LLMClient
from bot.agent.loop import TurnOutcome, TurnSetup, TurnState, new_state, run_turn
from bot.agent.sse import ToolCall
from bot.agent.toolspec import Tool, ToolContext
from bot.config import Limits, Settings, load_settings
from bot.sandbox.killable import run_killable
from tests.support.killable_targets import write_pid_and_spin

OBJ = {"type": "object", "properties": {}, "additionalProperties": True}


async def _echo(_ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    return {"success": True, "echo": args}


async def _huge(_ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    return {"success": True, "content": "x" * int(args.get("size", 200_000))}


async def _hang_async(_ctx: ToolContext, _args: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(3600)
    return {"success": True}


async def _hang_blocking(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    await run_killable(write_pid_and_spin, args["pid_file"])
    return {"success": True}


async def _boom(_ctx: ToolContext, _args: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("disk on fire")


@dataclass
class SendLog:
    sends: list[dict[str, Any]] = field(default_factory=list)


def side_effect_tool(log: SendLog) -> Tool:
    async def send(_ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        log.sends.append(args)
        return {"success": True, "sent": True}

    return Tool(
        "send_sms_to_user",
        "send an sms",
        {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
        frozenset({"child", "pro"}),
        send,
        side_effects=True,
    )


ECHO = Tool(
    "echo",
    "echoes its arguments",
    {
        "type": "object",
        "properties": {"x": {"type": "integer"}},
        "required": ["x"],
    },
    frozenset({"child", "pro"}),
    _echo,
)
HUGE = Tool(
    "browse_url",
    "returns a huge page",
    {
        "type": "object",
        "properties": {"size": {"type": "integer"}},
    },
    frozenset({"child", "pro"}),
    _huge,
)
HANG = Tool(
    "hang",
    "never returns",
    OBJ,
    frozenset({"child", "pro"}),
    _hang_async,
    progress_note={"fr": "Je prépare ton fichier PDF…", "en": "Preparing your PDF file…"},
)
HANG_BLOCKING = Tool(
    "hang_blocking",
    "blocks in a process",
    {
        "type": "object",
        "properties": {"pid_file": {"type": "string"}},
        "required": ["pid_file"],
    },
    frozenset({"child", "pro"}),
    _hang_blocking,
)
BOOM = Tool("boom", "raises", OBJ, frozenset({"child", "pro"}), _boom)


def make_settings(url: str, **env: str) -> Settings:
    base = {
        "LLM_BASE_URL": url,
        "LLM_RETRY_BASE_S": "0.01",
        "LLM_API_KEY": "test-key",
        "LLM_MODEL": "main-model",
    }
    base.update(env)
    return load_settings(base)


@dataclass
class Turn:
    events: list[dict[str, Any]]
    outcome: TurnOutcome

    @property
    def texts(self) -> list[str]:
        return [e["text"] for e in self.events if e["type"] == "text"]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]


def ctx_factory(mode: str = "child") -> Any:
    def make(call: ToolCall) -> ToolContext:
        return ToolContext(
            services=None,  # type: ignore[arg-type]  # the loop's tests run tools that never reach it
            user_id=1,
            conversation_id=1,
            channel="cli",
            mode=mode,
            language="fr",
            tool_call_id=call.id,
        )

    return make


def as_dict(event: LoopEvent) -> dict[str, Any]:
    """An event as the seed writes it: {"type": kind, its fields}."""
    return {"type": event.kind, **{f.name: getattr(event, f.name) for f in fields(event)}}


@dataclass
class Side:
    """The loop's side for a test: tools get `ctx_factory`'s context; the rest is what the test gives."""

    mode: str = "child"
    save_state: Callable[[TurnState], Awaitable[None]] | None = None
    stop: Callable[[], Awaitable[bool]] | None = None
    text: Callable[[str], Any] | None = None
    images: Callable[[list[dict[str, Any]]], Awaitable[list[dict[str, Any]]]] | None = None
    messages: Callable[[list[dict[str, Any]]], Awaitable[None]] | None = None

    @property
    def streams(self) -> bool:
        return self.text is not None

    def make_context(self, call: ToolCall) -> ToolContext:
        return ctx_factory(self.mode)(call)

    def on_text(self, chunk: str) -> bool:
        return bool(self.text(chunk)) if self.text is not None else False

    async def on_messages(self, new: list[dict[str, Any]]) -> None:
        if self.messages is not None:
            await self.messages(new)

    async def without_images(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        return await self.images(messages) if self.images is not None else None

    async def save(self, state: TurnState) -> None:
        if self.save_state is not None:
            await self.save_state(state)

    async def should_stop(self) -> bool:
        return await self.stop() if self.stop is not None else False


def start(
    llm: LLMClient,
    tools: list[Tool],
    *,
    limits: Limits | None = None,
    mode: str = "child",
    known: tuple[str, ...] = (),
    context_tokens: int = 32_000,
    messages: list[dict[str, Any]] | None = None,
    state: TurnState | None = None,
    turn_timeout_s: float | None = None,
    taken_ids: set[str] | None = None,
    save: Callable[[TurnState], Awaitable[None]] | None = None,
    should_stop: Callable[[], Awaitable[bool]] | None = None,
    on_text: Callable[[str], Any] | None = None,
    without_images: Callable[[list[dict[str, Any]]], Awaitable[list[dict[str, Any]]]] | None = None,
    on_messages: Callable[[list[dict[str, Any]]], Awaitable[None]] | None = None,
    **setup: Any,
) -> AsyncIterator[LoopEvent]:
    """The loop's events for a turn from `messages` (or a saved `state`), with `setup`'s other
    TurnSetup fields (budget, effects, promote_at, redact_arguments, cache_key)."""
    limits = limits or Limits()
    if state is None:
        base = messages or [{"role": "system", "content": "sys"}, {"role": "user", "content": "Bonjour"}]
        timeout = turn_timeout_s if turn_timeout_s is not None else limits.turn_timeout_s
        state = new_state(list(base), timeout_s=timeout, taken_ids=taken_ids)
        state.tool_names = [t.name for t in tools]
    plan = TurnSetup(tools=tools, known_names=known, mode=mode, limits=limits, context_tokens=context_tokens,
                     **setup)
    side = Side(mode, save, should_stop, on_text, without_images, on_messages)
    return run_turn(llm, state, plan, side)


async def drive(llm: LLMClient, tools: list[Tool], **kw: Any) -> Turn:
    events = [as_dict(event) async for event in start(llm, tools, **kw)]
    assert events[-1]["type"] == "final"
    return Turn(events[:-1], events[-1]["outcome"])


def offer(h: Any, *tools: Tool) -> None:
    """Offers test-only tools instead of the registry's (the composition seam handlers use)."""
    h.services.extra["tools_for_mode"] = lambda mode, settings: list(tools)
