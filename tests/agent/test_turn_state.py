"""The turn as saved state: saved after every step, resumed from it, promoted, cancelled."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from bot.agent.llm import LLMClient
from bot.agent.loop import ANSWERED, CANCELLED, FORCED_MAX_ITERATIONS, PROMOTED, TurnState
from bot.agent.toolspec import Tool, ToolContext
from bot.config import Limits
from tests.fakes.llm import FakeLLM
from tests.support.agent_loop import ECHO, OBJ, drive, make_settings


async def _slow(_ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(float(args.get("s", 0.4)))
    return {"success": True, "slept": args.get("s", 0.4)}


SLOW = Tool("slow", "sleeps", OBJ, frozenset({"child", "pro"}), _slow)


async def test_state_is_saved_after_every_step_and_survives_json(fake_llm: FakeLLM) -> None:
    fake_llm.push_tool_calls(("echo", {"x": 1}))
    fake_llm.push_tool_calls(("echo", {"x": 2}))
    fake_llm.push_text("Fini.")
    llm = LLMClient(make_settings(fake_llm.url))
    saved: list[dict[str, Any]] = []

    async def save(state: TurnState) -> None:
        saved.append(json.loads(json.dumps(state.to_json())))

    turn = await drive(llm, [ECHO], save=save)
    assert turn.outcome.exit_reason == ANSWERED
    assert [s["iteration"] for s in saved] == [1, 2, 3]
    assert [s["position"] for s in saved] == [1, 2, 2]
    assert saved[-1]["done"] is True and saved[-1]["shown"] == ["Fini."]
    # Each saved state holds the turn so far: after step 2, two calls and their results.
    roles = [m["role"] for m in saved[1]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]
    await llm.close()


async def test_a_saved_state_resumes_at_its_next_step(fake_llm: FakeLLM) -> None:
    fake_llm.push_tool_calls(("echo", {"x": 1}))
    fake_llm.push_tool_calls(("echo", {"x": 2}))
    llm = LLMClient(make_settings(fake_llm.url))
    saved: list[dict[str, Any]] = []

    async def save(state: TurnState) -> None:
        saved.append(json.loads(json.dumps(state.to_json())))

    # The first process dies after two steps: its generator is simply dropped.
    gen = drive(llm, [ECHO], save=save, should_stop=_after(2, saved))
    first = await gen
    assert first.outcome.exit_reason == CANCELLED and len(saved) == 2
    fake_llm.push_text("Repris et fini.")
    state = TurnState.from_json(saved[-1])
    second = await drive(llm, [ECHO], state=state)
    assert second.texts == ["Repris et fini."]
    assert [e["n"] for e in second.events if e["type"] == "step"] == [3]
    request = fake_llm.requests[-1]["messages"]
    assert [m["role"] for m in request][-4:] == ["assistant", "tool", "assistant", "tool"]
    await llm.close()


def _after(steps: int, saved: list[Any]) -> Any:
    async def should_stop() -> bool:
        return len(saved) >= steps

    return should_stop


async def test_the_iteration_cap_counts_the_steps_of_earlier_runs(fake_llm: FakeLLM) -> None:
    fake_llm.push_tool_calls(("echo", {"x": 1}), content="")
    fake_llm.push_text("Réponse forcée.")
    llm = LLMClient(make_settings(fake_llm.url))
    state = TurnState(messages=[{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}],
                      started=time.time(), deadline=time.time() + 60, iteration=9)
    turn = await drive(llm, [ECHO], state=state)
    # Step 10 is the last: sent with tool_choice none, and its tool calls are not run.
    assert fake_llm.requests[0]["tool_choice"] == "none"
    assert turn.outcome.exit_reason == FORCED_MAX_ITERATIONS
    assert not [e for e in turn.events if e["type"] == "tool_start"]
    await llm.close()


async def test_a_turn_past_its_direct_budget_is_promoted_before_its_next_step(fake_llm: FakeLLM) -> None:
    for _ in range(3):
        fake_llm.push_tool_calls(("slow", {"s": 0.4}))
    llm = LLMClient(make_settings(fake_llm.url))
    limits = Limits(turn_timeout_s=60)
    turn = await drive(llm, [SLOW], limits=limits, promote_at=time.time() + 0.6)
    kinds = [e["type"] for e in turn.events]
    assert turn.outcome.exit_reason == PROMOTED
    # Step 2's tool was running when the budget passed: the caller is told at once (long_work),
    # the tool is not cut, and the turn stops before step 3.
    assert kinds.count("step") == 2 and kinds.index("long_work") < kinds.index("promote")
    assert [e["status"] for e in turn.events if e["type"] == "tool_end"] == ["ok", "ok"]
    state = turn.outcome.state
    assert state is not None and state.iteration == 2 and not state.done and state.position == 2
    assert len(fake_llm.requests) == 2
    await llm.close()


async def test_asked_for_the_background_the_turn_is_promoted_at_once(fake_llm: FakeLLM) -> None:
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [ECHO], promote_at=time.time() - 1)
    assert [e["type"] for e in turn.events] == ["promote"]
    assert turn.outcome.exit_reason == PROMOTED and fake_llm.requests == []
    await llm.close()


async def test_a_turn_without_tools_is_never_promoted(fake_llm: FakeLLM) -> None:
    fake_llm.push_text("Bonjour.")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [], promote_at=time.time() - 1)
    assert turn.texts == ["Bonjour."] and turn.outcome.exit_reason == ANSWERED
    await llm.close()
