"""A step whose calls all only read (`Tool.reads_only`) runs them in the session the caller lends
(`TurnSetup.session`), one after the other, with nothing saved or settled before them: their reads
share the turn's transaction. A step with any other tool saves the held messages and settles the
charge first, and its tools take sessions of their own, as before."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from bot.agent.llm import LLMClient
from bot.agent.loop import ANSWERED, Budget
from bot.agent.toolspec import Tool, ToolContext
from tests.fakes.llm import FakeLLM
from tests.support.agent_loop import OBJ, drive, make_settings


async def test_a_step_that_only_reads_shares_the_lent_session(fake_llm: FakeLLM) -> None:
    lent = cast(Any, object())  # the turn's session as the message's side lends it
    journal: list[Any] = []
    running = [0]

    async def read(ctx: ToolContext, _args: dict[str, Any]) -> dict[str, Any]:
        running[0] += 1
        journal.append(("read", ctx.session is lent, running[0]))
        await asyncio.sleep(0.01)
        running[0] -= 1
        return {"success": True}

    async def write(ctx: ToolContext, _args: dict[str, Any]) -> dict[str, Any]:
        journal.append(("write", ctx.session is lent))
        return {"success": True}

    async def settle() -> None:
        journal.append("settle")

    async def saved(new: list[dict[str, Any]]) -> None:
        journal.append(("saved", [m["role"] for m in new]))

    reads = Tool("reads", "reads", OBJ, frozenset({"child"}), read, reads_only=True)
    writes = Tool("writes", "writes", OBJ, frozenset({"child"}), write)
    fake_llm.push_tool_calls(("reads", {"n": 1}), ("reads", {"n": 2}))
    fake_llm.push_tool_calls(("reads", {"n": 3}), ("writes", {}))
    fake_llm.push_text("Fini.")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [reads, writes], session=lent, budget=Budget(settle=settle),
                       hold_tool_messages=True, on_messages=saved)
    await llm.close()
    assert turn.outcome.exit_reason == ANSWERED
    assert journal == [
        "settle",  # before the first model call
        ("read", True, 1), ("read", True, 1),  # in the lent session, one at a time, nothing before
        "settle",  # before the second call: the reads' transaction ends with the charge's
        ("saved", ["assistant", "tool", "tool"]), "settle",  # before a step that does not only read
        ("read", False, 1), ("write", False),  # each in a session of its own
        "settle",
        ("saved", ["assistant", "tool", "tool", "assistant"]),  # with the answer, one write
        "settle",
    ]
