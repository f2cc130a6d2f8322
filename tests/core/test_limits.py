"""Limits that protect people and the bill: a user's messages per minute (kept, answered later), one
turn of a user at a time across pipelines, model calls at once per process, tokens per user and day."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from prometheus_client import REGISTRY
from sqlalchemy import select

from bot.agent.llm import LLMClient, LLMError
from bot.billing import credits
from bot.channel.context import Incoming
from bot.config import load_settings
from bot.pipeline.rate import NOTICE
from bot.pipeline.workers import Pipeline
from bot.storage.models import InboundMessage, User
from tests.fakes.llm import FakeLLM, Step
from tests.support.harness import Harness

PHONE = "+2250700000301"


def sample(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


def echo(body: dict[str, Any]) -> Step:
    """The model answers each question with its own words: the order of the replies shows."""
    asked = [m["content"] for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], str)]
    return Step("text", content=f"R:{asked[-1]}")


async def until(condition: Any, what: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def statuses(h: Harness) -> list[str]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(InboundMessage.status).order_by(InboundMessage.id))).all())


# --- USER_MAX_MESSAGES_PER_MINUTE ------------------------------------------------------------


async def test_messages_past_the_minute_limit_are_kept_and_answered_in_order(make_harness: Any) -> None:
    h = await make_harness(USER_MAX_MESSAGES_PER_MINUTE="3")
    h.llm.responder = echo
    await h.make_user(PHONE)
    postponed, notices = sample("deblo_rate_limited_total", {"action": "postponed"}), \
        sample("deblo_rate_limited_total", {"action": "notice"})
    for n in range(1, 6):
        assert (await h.inbound(PHONE, f"q{n}"))[0] == 200

    async def four_sent() -> bool:
        return len(await h.texts_to(PHONE)) >= 4

    await until(four_sent, "three answers and the notice")
    await asyncio.sleep(1.0)  # several sweeps: the two others stay held, and no second notice goes
    assert await h.texts_to(PHONE) == ["R:q1", "R:q2", "R:q3", NOTICE[0]]
    assert await statuses(h) == ["done", "done", "done", "pending", "pending"]
    assert sample("deblo_rate_limited_total", {"action": "notice"}) == notices + 1
    assert sample("deblo_rate_limited_total", {"action": "postponed"}) > postponed

    h.clock.advance(seconds=61)  # the minute of the first three has passed
    await h.settle()
    assert await h.texts_to(PHONE) == ["R:q1", "R:q2", "R:q3", NOTICE[0], "R:q4", "R:q5"]
    assert await statuses(h) == ["done"] * 5


async def test_the_notice_follows_the_language(make_harness: Any) -> None:
    h = await make_harness(USER_MAX_MESSAGES_PER_MINUTE="1")
    h.llm.responder = echo
    await h.make_user(PHONE, language="en")
    await h.inbound(PHONE, "a")
    await h.inbound(PHONE, "b")

    async def notice_sent() -> bool:
        return NOTICE[1] in await h.texts_to(PHONE)

    await until(notice_sent, "the English notice")
    h.clock.advance(seconds=61)
    await h.settle()
    assert await h.texts_to(PHONE) == ["R:a", NOTICE[1], "R:b"]


async def test_zero_turns_the_limit_off(make_harness: Any) -> None:
    off = await make_harness(USER_MAX_MESSAGES_PER_MINUTE="0")
    off.llm.responder = echo
    other = "+2250700000302"
    await off.make_user(other)
    for n in range(25):
        await off.inbound(other, f"m{n}")
    await off.settle()
    assert await off.texts_to(other) == [f"R:m{n}" for n in range(25)]


# --- one turn of a user at a time, whichever pipeline -----------------------------------------


class Watch:
    """A dispatch per pipeline that records who ran what, and how many turns of a user ran at once."""

    def __init__(self) -> None:
        self.running: dict[int, int] = defaultdict(int)
        self.peak: dict[int, int] = defaultdict(int)
        self.order: dict[int, list[str]] = defaultdict(list)
        self.by: dict[str, int] = defaultdict(int)
        self.gate = asyncio.Event()

    def dispatch(self, name: str) -> Any:
        async def run(msg: Incoming) -> str:
            uid = msg.user.id
            self.running[uid] += 1
            self.peak[uid] = max(self.peak[uid], self.running[uid])
            self.order[uid].append(msg.text)
            self.by[name] += 1
            try:
                if msg.text == "hold":
                    await self.gate.wait()
                await asyncio.sleep(0.02)
            finally:
                self.running[uid] -= 1
            return "watch"

        return run


async def test_one_users_messages_never_run_at_once_across_two_pipelines(harness: Harness) -> None:
    h = harness
    watch = Watch()
    await h.use_dispatch(watch.dispatch("a"))
    second = Pipeline(h.services, watch.dispatch("b"))  # another process on the same database and state
    await second.start()
    try:
        phones = [f"+22507000004{i:02d}" for i in range(4)]
        users = [await h.make_user(p) for p in phones]

        async def burst(phone: str) -> None:
            for n in range(6):
                await h.inbound(phone, f"{phone[-2:]}-{n}")

        await asyncio.gather(*(burst(p) for p in phones))
        await h.settle()
        await until(lambda: _idle(second), "the second pipeline idle")
        for user, phone in zip(users, phones, strict=True):
            assert watch.order[user.id] == [f"{phone[-2:]}-{n}" for n in range(6)]
            assert watch.peak[user.id] == 1

        # Deterministically: while one pipeline runs the user's turn, neither may start the next.
        held = users[0]
        await h.inbound(phones[0], "hold")
        await h.inbound(phones[0], "next")
        await until(lambda: _running(watch, held.id), "the held turn running")
        await second.process_user(held.id)
        await h.pipeline.process_user(held.id)
        await asyncio.sleep(0.3)  # sweeps queue the user to both pipelines meanwhile
        assert watch.running[held.id] == 1 and watch.order[held.id][-1] == "hold"
        watch.gate.set()
        await h.settle()
        assert watch.order[held.id][-2:] == ["hold", "next"] and watch.peak[held.id] == 1
    finally:
        await second.stop()


async def _idle(pipeline: Pipeline) -> bool:
    return not pipeline.active


async def _running(watch: Watch, user_id: int) -> bool:
    return watch.running[user_id] == 1


# --- LLM_MAX_CONCURRENCY -----------------------------------------------------------------------


class CountingLLM(FakeLLM):
    """The fake provider, counting the requests it is answering at once."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.peak = 0

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            return await super()._handle(request)
        finally:
            self.in_flight -= 1


async def test_model_calls_wait_for_one_of_llm_max_concurrency_slots(tmp_path: Path) -> None:
    server = CountingLLM()
    await server.start()
    settings = load_settings({"DATA_DIR": str(tmp_path), "LLM_BASE_URL": server.url, "LLM_API_KEY": "k",
                              "LLM_MAX_CONCURRENCY": "2", "LLM_TIMEOUT_S": "10"})
    client = LLMClient(settings)
    try:
        for n in range(6):
            server.push_text(f"réponse {n}", delay_s=0.3)
        waits = sample("deblo_llm_waits_total")
        started = time.monotonic()
        calls = [client.chat([{"role": "user", "content": f"q{n}"}]) for n in range(6)]
        answers = await asyncio.gather(*calls)
        elapsed = time.monotonic() - started
        assert sorted(a.content for a in answers) == [f"réponse {n}" for n in range(6)]
        assert server.peak == 2 and len(server.requests) == 6
        assert elapsed >= 0.85  # three rounds of two
        assert sample("deblo_llm_waits_total") == waits + 4
        assert sample("deblo_llm_in_flight") == 0
    finally:
        await client.close()
        await server.stop()


async def test_waiting_for_a_slot_counts_toward_the_calls_deadline(tmp_path: Path) -> None:
    server = CountingLLM()
    await server.start()
    settings = load_settings({"DATA_DIR": str(tmp_path), "LLM_BASE_URL": server.url, "LLM_API_KEY": "k",
                              "LLM_MAX_CONCURRENCY": "1"})
    client = LLMClient(settings)
    try:
        server.push_text("lente", delay_s=1.0)
        first = asyncio.create_task(client.chat([{"role": "user", "content": "q"}]))
        await asyncio.sleep(0.1)
        with pytest.raises(LLMError, match="deadline"):
            await client.chat([{"role": "user", "content": "q2"}], deadline=time.monotonic() + 0.3)
        assert (await first).content == "lente"
        assert len(server.requests) == 1  # the late call never reached the provider
    finally:
        await client.close()
        await server.stop()


# --- USER_DAILY_TOKEN_LIMIT --------------------------------------------------------------------


LIMIT_NOTICE = "La limite d'utilisation d'aujourd'hui est atteinte"


async def test_the_daily_token_ceiling_refuses_turns_and_says_so_once_a_day(make_harness: Any) -> None:
    h = await make_harness(USER_DAILY_TOKEN_LIMIT="6000")
    await h.make_user(PHONE, credit_balance=1000)
    refused, told = sample("deblo_daily_token_limit_total", {"action": "refused"}), \
        sample("deblo_daily_token_limit_total", {"action": "notice"})
    h.llm.push_text("Première réponse", usage={"prompt_tokens": 4000, "completion_tokens": 500,
                                               "total_tokens": 4500})
    await h.inbound(PHONE, "q1")
    await h.settle()
    for n in (2, 3):
        await h.inbound(PHONE, f"q{n}")
        await h.settle()
    texts = await h.texts_to(PHONE)
    assert texts[0] == "Première réponse" and len(texts) == 2 and texts[1].startswith(LIMIT_NOTICE)
    assert len(h.llm.requests) == 1  # 1,500 tokens left: no turn started, the notice once
    assert sample("deblo_daily_token_limit_total", {"action": "refused"}) == refused + 2
    assert sample("deblo_daily_token_limit_total", {"action": "notice"}) == told + 1
    assert await statuses(h) == ["done"] * 3  # answered (by the notice, then by nothing), not held

    h.clock.advance(days=1)  # a new day in the user's time zone
    await h.inbound(PHONE, "q4")
    await h.settle()
    assert len(h.llm.requests) == 2 and (await h.texts_to(PHONE))[-1] == h.llm.default_text


async def test_a_model_call_replayed_after_a_crash_counts_once_into_the_day(make_harness: Any) -> None:
    h = await make_harness(USER_DAILY_TOKEN_LIMIT="9000")
    made = await h.make_user(PHONE, credit_balance=1000)
    daily = credits.daily_tokens(h.services.state, h.settings, made, h.clock())
    assert daily is not None
    calls = iter([1, 1, 2])  # the second call replayed by the worker that took the job over
    budget = credits.within_today(None, None, daily, 9000, lambda: f"job:7:call:{next(calls)}")
    assert budget.spend is not None
    for tokens in (1000, 1000, 500):
        await budget.spend(tokens)
    assert await daily.used() == 1500
    await daily.add(200)  # a direct turn's call has no reference: counted each time
    await daily.add(200)
    assert await daily.used() == 1900


async def test_a_turns_budget_never_exceeds_what_is_left_today(make_harness: Any) -> None:
    h = await make_harness(USER_DAILY_TOKEN_LIMIT="9000")
    made = await h.make_user(PHONE, credit_balance=1000)
    async with h.services.sessions() as db:
        user = await db.get(User, made.id)
        assert user is not None
        daily = credits.daily_tokens(h.services.state, h.settings, user, h.clock())
        assert daily is not None and daily.key.endswith(credits.token_day(h.settings, user, h.clock()))
        await daily.add(4000)
        budget = await credits.turn_budget(db, user, None, h.settings, daily, h.clock)
        assert budget is not None and budget.tokens == 5000 and budget.notice == credits.DAILY_LIMIT_TEXT
        assert budget.spend is not None
        await budget.spend(3000)  # charged to the ledger and counted into the day
        assert await daily.used() == 7000 and await credits.balance(db, user.id) == 1000 - 2
        guest = User(phone="+2250700000399", mode="guest", created_at=h.clock())
        db.add(guest)
        await db.flush()
        theirs = credits.daily_tokens(h.services.state, h.settings, guest, h.clock())
        guest_budget = await credits.turn_budget(db, guest, None, h.settings, theirs, h.clock)
        assert guest_budget is not None and guest_budget.tokens == 9000
        assert await credits.turn_budget(db, guest, None, h.settings, None, h.clock) is None

    # A turn whose first call takes most of the day ends saying so, not speaking of credits.
    await h.services.state.kv_delete(daily.key)
    h.llm.push_tool_calls(("lookup_nothing", {}), usage={"prompt_tokens": 7000, "completion_tokens": 500,
                                                          "total_tokens": 7500})
    await h.inbound(PHONE, "Cherche quelque chose")
    await h.settle()
    assert len(h.llm.requests) == 1
    assert (await h.texts_to(PHONE))[-1] == credits.DAILY_LIMIT_TEXT["fr"]


# --- STOP goes before everything ----------------------------------------------------------------


async def test_stop_during_a_running_turn_stops_its_answer_and_is_confirmed(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    h.llm.push_text("Voici une longue explication des fractions.", delay_s=1.5)
    await h.inbound(PHONE, "Explique-moi les fractions")

    async def turn_started() -> bool:
        return len(h.llm.requests) == 1

    await until(turn_started, "the model called")
    await h.inbound(PHONE, "Stop")  # while the model is still writing
    await h.settle()
    texts = await h.texts_to(PHONE)
    assert len(texts) == 1 and "tu ne recevras plus aucun message" in texts[0], texts
    user = await h.user(PHONE)
    assert user is not None and user.opted_out
    assert await statuses(h) == ["done", "done"]  # the cut answer is not retried later


async def test_stop_in_a_held_back_burst_is_confirmed_at_once_and_nothing_else_answered(
    make_harness: Any,
) -> None:
    h = await make_harness(USER_MAX_MESSAGES_PER_MINUTE="2")
    h.llm.responder = echo
    await h.make_user(PHONE)
    for n in range(1, 5):
        await h.inbound(PHONE, f"q{n}")

    async def held() -> bool:
        return NOTICE[0] in await h.texts_to(PHONE)

    await until(held, "the rate notice")
    await h.inbound(PHONE, "ARRÊT")
    await h.settle()  # the clock does not move: the minute has not passed
    texts = await h.texts_to(PHONE)
    assert texts[:3] == ["R:q1", "R:q2", NOTICE[0]] and len(texts) == 4, texts
    assert "tu ne recevras plus aucun message" in texts[3]
    assert len(h.llm.requests) == 2  # q3 and q4 were never sent to the model
    assert await statuses(h) == ["done"] * 5  # kept, not lost


async def test_stop_then_start_in_quick_succession_ends_opted_in(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    await h.inbound(PHONE, "STOP")
    await h.inbound(PHONE, "START")
    await h.settle()
    texts = await h.texts_to(PHONE)
    assert len(texts) == 2 and "START pour revenir" in texts[0] and "de nouveau" in texts[1], texts
    user = await h.user(PHONE)
    assert user is not None and not user.opted_out
