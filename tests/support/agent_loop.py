"""Test-only tools, a runner for driving the loop against the FakeLLM server, and `offer`, which
gives a harness's turns test-only tools."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from bot.agent.llm import LLMClient
from bot.agent.loop import TurnOutcome, run_turn
from bot.agent.sse import ToolCall
from bot.agent.toolspec import Tool, ToolContext
from bot.capabilities.killable import run_killable
from bot.config import Limits, Settings, load_settings
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
            services=None,
            user_id=1,
            conversation_id=1,
            channel="cli",  # type: ignore[arg-type]
            mode=mode,
            language="fr",
            tool_call_id=call.id,
        )

    return make


async def drive(
    llm: LLMClient,
    tools: list[Tool],
    *,
    limits: Limits | None = None,
    mode: str = "child",
    known: tuple[str, ...] = (),
    context_tokens: int = 32_000,
    messages: list[dict[str, Any]] | None = None,
    **kw: Any,
) -> Turn:
    events: list[dict[str, Any]] = []
    gen: AsyncIterator[dict[str, Any]] = run_turn(
        llm,
        messages or [{"role": "system", "content": "sys"}, {"role": "user", "content": "Bonjour"}],
        tools=tools,
        known_names=known,
        mode=mode,
        make_context=ctx_factory(mode),
        limits=limits or Limits(),
        context_tokens=context_tokens,
        **kw,
    )
    async for event in gen:
        events.append(event)
    assert events[-1]["type"] == "final"
    return Turn(events[:-1], events[-1]["outcome"])


def offer(h: Any, *tools: Tool) -> None:
    """Offers test-only tools instead of the registry's (the composition seam handlers use)."""
    h.services.extra["tools_for_mode"] = lambda mode, settings: list(tools)
