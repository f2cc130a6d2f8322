"""What a turn may spend, how many calls one response may run, and side effects done once per
message however often its turn runs: the real loop, pipeline and ledger, with the LLM stand-in
returning many tool calls and large usage numbers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sqlalchemy import func, select

from bot.agent.effects import EffectStore
from bot.agent.executor import TurnMemory, execute_calls
from bot.agent.llm import LLMClient
from bot.agent.loop import ANSWERED, OVER_BUDGET, Budget
from bot.agent.sse import ToolCall
from bot.agent.toolspec import Tool, ToolContext
from bot.billing import credits
from bot.config import Limits
from bot.storage.models import CreditEntry, InboundMessage, Memory, Task, ToolEffect, TurnRecord
from tests.fakes.llm import FakeLLM
from tests.support.agent_loop import ECHO, HANG, OBJ, drive, make_settings, offer
from tools.create_task import TOOL as CREATE_TASK
from tools.save_memory import TOOL as SAVE_MEMORY

PHONE = "+2250700000001"


def usage(total: int) -> dict[str, int]:
    return {"prompt_tokens": total - 100, "completion_tokens": 100, "total_tokens": total}


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def balance_and_usage(h: Any, user_id: int) -> tuple[int, list[int]]:
    async with h.services.sessions() as db:
        rows = await db.scalars(
            select(CreditEntry.delta).where(CreditEntry.user_id == user_id, CreditEntry.reason == "usage")
            .order_by(CreditEntry.id)
        )
        return await credits.balance(db, user_id), list(rows)


# --- the loop alone ------------------------------------------------------------------------------


async def test_loop_stops_before_a_call_past_the_budget(fake_llm: FakeLLM) -> None:
    for _ in range(5):
        fake_llm.push_tool_calls(("echo", {"x": 1}), usage=usage(100_000))
    llm = LLMClient(make_settings(fake_llm.url))
    spent: list[int] = []

    async def spend(tokens: int) -> None:
        spent.append(tokens)

    turn = await drive(llm, [ECHO], budget=Budget(tokens=150_000, spend=spend))
    await llm.close()
    # The first two calls fit (each estimated at a few hundred tokens beforehand); the third would
    # take the turn past 150,000 tokens, so it is not made and the user is told.
    assert len(fake_llm.requests) == 2 and spent == [100_000, 100_000]
    assert turn.outcome.exit_reason == OVER_BUDGET
    assert "crédits" in turn.texts[-1] and "ACHETER" in turn.texts[-1]


async def test_loop_without_enough_budget_for_one_call_makes_none(fake_llm: FakeLLM) -> None:
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [ECHO], budget=Budget(tokens=50))
    await llm.close()
    assert fake_llm.requests == [] and turn.outcome.exit_reason == OVER_BUDGET and turn.texts


async def test_every_call_asks_for_at_most_llm_max_tokens(fake_llm: FakeLLM) -> None:
    fake_llm.push_tool_calls(("echo", {"x": 1}))
    fake_llm.push_text("Fini.")
    llm = LLMClient(make_settings(fake_llm.url, LLM_MAX_TOKENS="3000"))
    turn = await drive(llm, [ECHO])
    default = LLMClient(make_settings(fake_llm.url))
    fake_llm.push_text("Bonjour.")
    await drive(default, [])
    await llm.close()
    await default.close()
    assert turn.outcome.exit_reason == ANSWERED
    assert [r["max_tokens"] for r in fake_llm.requests] == [3000, 3000, 4096]  # 4096 by default


async def test_a_nearly_spent_budget_asks_for_fewer_tokens(fake_llm: FakeLLM) -> None:
    fake_llm.push_tool_calls(("echo", {"x": 1}), usage=usage(9_000))
    fake_llm.push_text("Fini.")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [ECHO], budget=Budget(tokens=10_000))
    await llm.close()
    assert turn.outcome.exit_reason == ANSWERED
    first, second = (r["max_tokens"] for r in fake_llm.requests)
    assert first == 4096  # 10,000 tokens leave more than LLM_MAX_TOKENS after the first prompt
    # After 9,000 tokens, what is left once the second prompt is counted, and no less than an answer needs.
    assert 512 <= second < 1_000


async def test_at_most_max_calls_from_one_response_run(fake_llm: FakeLLM) -> None:
    fake_llm.push_tool_calls(*[("echo", {"x": i}) for i in range(12)], usage=usage(5_000))
    fake_llm.push_text("Fini.")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [ECHO], limits=Limits(max_tool_calls_per_response=8))
    await llm.close()
    assert turn.outcome.exit_reason == ANSWERED
    assert len(turn.of("tool_start")) == 8
    results = tool_results(fake_llm.requests[1])
    assert len(results) == 12  # every call has its result, in order
    assert [r["echo"]["x"] for r in results[:8]] == list(range(8))
    assert all(r["success"] is False and r["code"] == "too_many_calls" for r in results[8:])
    assert "at most 8 tool calls" in results[8]["error"]
    assert [r["status"] for r in turn.outcome.tool_runs][8:] == ["over_limit"] * 4


def test_settings_for_the_caps() -> None:
    from bot.config import ConfigError, load_settings

    settings = load_settings({"MAX_TOOL_CALLS_PER_RESPONSE": "3", "TURN_OVERDRAFT_CREDITS": "0"})
    assert settings.limits.max_tool_calls_per_response == 3 and settings.turn_overdraft_credits == 0
    defaults = load_settings({})
    assert defaults.limits.max_tool_calls_per_response == 8 and defaults.turn_overdraft_credits == 5
    for env, name in (({"MAX_TOOL_CALLS_PER_RESPONSE": "0"}, "MAX_TOOL_CALLS_PER_RESPONSE"),
                      ({"TURN_OVERDRAFT_CREDITS": "-1"}, "TURN_OVERDRAFT_CREDITS"),
                      ({"TURN_OVERDRAFT_CREDITS": "beaucoup"}, "TURN_OVERDRAFT_CREDITS")):
        try:
            load_settings(env)
        except ConfigError as exc:
            assert name in str(exc)
        else:
            raise AssertionError(f"{env} was accepted")


# --- end to end: the ledger ----------------------------------------------------------------------


async def test_turn_stops_at_balance_plus_overdraft_and_the_user_is_told(make_harness: Any) -> None:
    h = await make_harness(TURN_OVERDRAFT_CREDITS="2")  # 2,000 tokens a credit
    offer(h, ECHO)
    user = await h.make_user(PHONE, mode="pro", credit_balance=3)  # pays for 5 credits: 10,000 tokens
    for _ in range(6):
        h.llm.push_tool_calls(*[("echo", {"x": j}) for j in range(20)], usage=usage(6_000))
    await h.inbound(PHONE, "Travaille beaucoup")
    await h.settle()
    assert len(h.llm.requests) == 2  # a third call would pass 10,000 tokens
    assert len(tool_results(h.llm.requests[1])) == 20  # 8 run, 12 told they were not
    texts = await h.texts_to(PHONE)
    assert "continuer coûterait plus que les crédits" in texts[-1]
    assert "ACHETER" not in texts[-1]  # no PAYMENT_PROVIDER: nothing to buy is offered
    # 12,000 tokens spent = 6 credits; 3 + an overdraft of 2 could be taken: the balance is -2.
    assert await balance_and_usage(h, user.id) == (-2, [-3, -2])
    async with h.services.sessions() as db:
        [turn] = (await db.scalars(select(TurnRecord))).all()
    assert turn.exit_reason == OVER_BUDGET
    calls = len(h.llm.requests)
    await h.inbound(PHONE, "Encore ?")
    await h.settle()
    assert len(h.llm.requests) == calls and "plus de crédits" in (await h.texts_to(PHONE))[-1]


async def test_a_huge_call_is_charged_down_to_the_overdraft_not_capped_at_the_balance(
    make_harness: Any,
) -> None:
    h = await make_harness()  # overdraft 5 by default
    user = await h.make_user(PHONE, mode="child", credit_balance=1)
    h.llm.push_text("Réponse très chère.", usage=usage(320_000))  # 160 credits' worth in one call
    await h.inbound(PHONE, "Bonjour")
    await h.settle()
    assert await h.texts_to(PHONE) == ["Réponse très chère."]
    assert await balance_and_usage(h, user.id) == (-5, [-6])


async def test_a_turn_interrupted_after_replying_is_charged(make_harness: Any) -> None:
    h = await make_harness(WORKER_LEASE_S="1")
    offer(h, HANG)
    user = await h.make_user(PHONE, mode="pro", credit_balance=20)
    h.llm.push_tool_calls(("hang", {}), content="Je commence.", usage=usage(7_000))
    await h.inbound(PHONE, "Fais un long travail")
    for _ in range(500):
        if await h.texts_to(PHONE):
            break
        await asyncio.sleep(0.01)
    await h.stop_workers()  # the worker dies while the tool runs, after the first words went out
    await h.start_workers()
    await h.settle()
    texts = await h.texts_to(PHONE)
    assert texts[0] == "Je commence." and "interrompue" in texts[-1]
    assert await balance_and_usage(h, user.id) == (16, [-4])  # 7,000 tokens: 4 credits


# --- end to end: side effects once per message ----------------------------------------------------


def slow_send_tool(calls: list[dict[str, Any]]) -> Tool:
    async def run(_ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        await asyncio.sleep(3600)  # the worker dies while it runs
        return {"success": True}

    return Tool("slow_send", "sends slowly", OBJ, frozenset({"child", "pro"}), run, side_effects=True)


async def crash_during_tools(h: Any) -> None:
    await h.inbound(PHONE, "Note ça et rappelle-moi")
    for _ in range(500):
        async with h.services.sessions() as db:
            started = await db.scalar(select(func.count(ToolEffect.id)))
        if started >= 3:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)
    await h.stop_workers()


async def test_a_rerun_turn_does_not_repeat_side_effects(make_harness: Any) -> None:
    h = await make_harness(WORKER_LEASE_S="1")
    sends: list[dict[str, Any]] = []
    offer(h, SAVE_MEMORY, CREATE_TASK, slow_send_tool(sends), ECHO)
    user = await h.make_user(PHONE, mode="pro")
    calls = [("save_memory", {"fact": "Prépare le bac en 2027"}),
             ("create_task", {"title": "Réviser les fractions"}),
             ("slow_send", {"text": "rappel"})]
    h.llm.push_tool_calls(*calls, usage=usage(3_000))
    await crash_during_tools(h)
    # Run again: the model (which never saw the first run's results) asks for the same calls.
    h.llm.push_tool_calls(*calls, usage=usage(3_000))
    h.llm.push_text("C'est noté.", usage=usage(3_000))
    await h.start_workers()
    await h.settle()
    assert await h.texts_to(PHONE) == ["C'est noté."]
    async with h.services.sessions() as db:
        assert await db.scalar(select(func.count(Memory.id))) == 1
        assert await db.scalar(select(func.count(Task.id))) == 1
        row = await db.scalar(select(InboundMessage))
        assert row is not None and (row.status, row.attempts) == ("done", 2)
    memory, task, send = tool_results(h.llm.requests[-1])
    assert memory["success"] is True and memory["status"] == "saved" and "not done again" in memory["note"]
    assert task["success"] is True and task["title"] == "Réviser les fractions" and "note" in task
    # Cut short while it ran: it may have happened, so it is not done again and the model is told.
    assert send["code"] == "interrupted" and len(sends) == 1
    # Both runs are paid: 3,000 tokens (2 credits), then 3,000 and 3,000 more (3 credits in all).
    assert await balance_and_usage(h, user.id) == (h.settings.signup_credits - 5, [-2, -2, -1])


async def test_new_calls_of_a_rerun_after_saved_work_run(make_harness: Any) -> None:
    """A re-run whose model sees the first run's saved calls and asks for more gets new keys."""
    h = await make_harness(WORKER_LEASE_S="1")
    offer(h, CREATE_TASK, HANG)
    await h.make_user(PHONE, mode="pro")
    h.llm.push_tool_calls(("create_task", {"title": "Un"}))
    h.llm.push_tool_calls(("hang", {}))
    await h.inbound(PHONE, "Deux tâches")
    for _ in range(500):
        if len(h.llm.requests) >= 2:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    await h.stop_workers()
    h.llm.push_tool_calls(("create_task", {"title": "Deux"}))
    h.llm.push_text("Deux tâches créées.")
    await h.start_workers()
    await h.settle()
    async with h.services.sessions() as db:
        titles = list(await db.scalars(select(Task.title).order_by(Task.id)))
        keys = list(await db.scalars(select(ToolEffect.key).order_by(ToolEffect.id)))
    assert titles == ["Un", "Deux"]
    assert len(set(keys)) == 2 and all(k.endswith(":create_task") for k in keys)


async def test_a_database_only_effect_cut_short_runs_again_once(harness: Any) -> None:
    """save_memory stores its key with the fact: a claim left "started" means no fact was saved,
    so the call runs; a tool whose effect leaves the database is not run again."""
    h = harness
    user = await h.make_user(PHONE, mode="pro")
    sends: list[dict[str, Any]] = []
    tools = {t.name: t for t in (SAVE_MEMORY, slow_send_tool(sends))}
    store = EffectStore(h.services.sessions, user.id, inbound_id=4242)
    async with h.services.sessions() as db:
        for position, name in enumerate(tools):
            db.add(ToolEffect(key=store.key(position, name), user_id=user.id, tool=name, status="started",
                              created_at=h.clock()))
        await db.commit()
    calls = [ToolCall("call_a", "save_memory", '{"fact": "Aime la chimie"}'),
             ToolCall("call_b", "slow_send", '{"text": "x"}')]

    def make(call: ToolCall) -> ToolContext:
        return ToolContext(services=h.services, user_id=user.id, conversation_id=1, channel="whatsapp",
                           mode="pro", language="fr", tool_call_id=call.id)

    async def run() -> list[Any]:
        return await execute_calls(calls, tools=tools, mode="pro", make_context=make, timeout_s=5,
                                   memory=TurnMemory(), effects=store)

    first = await run()
    assert [o.status for o in first] == ["ok", "interrupted"] and sends == []
    second = await run()
    assert [o.status for o in second] == ["replayed", "interrupted"]
    assert second[0].result["fact"] == "Aime la chimie"
    async with h.services.sessions() as db:
        assert list(await db.scalars(select(Memory.fact))) == ["Aime la chimie"]
        done = await db.scalar(select(ToolEffect).where(ToolEffect.key == store.key(0, "save_memory")))
        assert done is not None and done.status == "done" and done.result["status"] == "saved"
