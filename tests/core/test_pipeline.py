"""Workers: one user's messages one at a time and in order, users concurrently, crashes recovered."""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from typing import Any

import pytest
from sqlalchemy import select

from bot.channel.context import Incoming
from bot.storage.models import Conversation, InboundMessage, OutboundMessage
from tests.support.harness import Harness

PHONE = "+2250700000001"


class Recorder:
    """A dispatch that echoes each message after a short random pause, and watches for overlap."""

    def __init__(self, pause_s: float = 0.01) -> None:
        self.pause_s = pause_s
        self.seen: dict[int, list[str]] = defaultdict(list)
        self.running: set[int] = set()
        self.overlap_same_user = 0
        self.max_concurrent = 0

    async def __call__(self, msg: Incoming) -> str:
        uid = msg.user.id
        if uid in self.running:
            self.overlap_same_user += 1
        self.running.add(uid)
        self.max_concurrent = max(self.max_concurrent, len(self.running))
        try:
            await asyncio.sleep(random.uniform(0, self.pause_s))
            self.seen[uid].append(msg.text)
            await msg.reply(f"echo {msg.text}")
        finally:
            self.running.discard(uid)
        return "recorder"


async def test_burst_from_one_user_is_handled_in_order_and_once(harness: Harness) -> None:
    h = harness
    recorder = Recorder()
    await h.use_dispatch(recorder)
    await h.make_user(PHONE)
    texts = [f"message {i}" for i in range(20)]
    statuses = await asyncio.gather(*(h.inbound(PHONE, t) for t in texts))
    assert all(s == 200 for s, _ in statuses)
    await h.settle()
    async with h.services.sessions() as db:
        rows = (await db.scalars(select(InboundMessage).order_by(InboundMessage.id))).all()
        arrival = [r.body for r in rows]
        assert all(r.status == "done" and r.attempts == 1 for r in rows)
        conv = await db.scalar(select(Conversation))
        assert conv is not None and conv.user_message_count == 20
    assert sorted(arrival) == sorted(texts)
    [handled] = recorder.seen.values()
    assert handled == arrival  # arrival order, each once
    assert await h.texts_to(PHONE) == [f"echo {t}" for t in arrival]
    assert recorder.overlap_same_user == 0


@pytest.mark.serial  # fifty turns at once within a bound wait: the machine to itself
async def test_fifty_users_at_once(harness: Harness) -> None:
    h = harness
    recorder = Recorder(pause_s=0.05)
    await h.use_dispatch(recorder)
    phones = [f"+22507000{i:05d}" for i in range(50)]
    for phone in phones:
        await h.make_user(phone)
    sends = [h.inbound(p, f"{p} #{n}") for n in range(2) for p in phones]
    results = await asyncio.gather(*sends)
    assert all(status == 200 for status, _ in results)
    await h.settle(timeout_s=30)
    assert sum(len(v) for v in recorder.seen.values()) == 100
    async with h.services.sessions() as db:
        rows = (await db.scalars(select(InboundMessage).order_by(InboundMessage.id))).all()
    for phone in phones:
        arrival = [r.body for r in rows if r.from_addr == f"whatsapp:{phone}"]
        assert sorted(arrival) == [f"{phone} #0", f"{phone} #1"]
        assert await h.texts_to(phone) == [f"echo {body}" for body in arrival]
    assert recorder.overlap_same_user == 0
    assert recorder.max_concurrent > 1  # users really ran side by side


async def test_a_failing_handler_gets_the_user_a_plain_apology(harness: Harness) -> None:
    h = harness

    async def broken(msg: Incoming) -> None:
        raise RuntimeError("boom")

    await h.use_dispatch(broken)
    await h.make_user(PHONE)
    await h.inbound(PHONE, "Salut")
    await h.settle()
    [text] = await h.texts_to(PHONE)
    assert text.startswith("Désolé, un problème technique")
    assert "boom" not in text and "RuntimeError" not in text
    async with h.services.sessions() as db:
        row = await db.scalar(select(InboundMessage))
        assert row is not None and row.status == "failed" and "boom" in (row.error or "")


async def test_english_users_get_the_apology_in_english(harness: Harness) -> None:
    h = harness

    async def broken(msg: Incoming) -> None:
        raise ValueError("nope")

    await h.use_dispatch(broken)
    await h.make_user(PHONE, language="en")
    await h.inbound(PHONE, "Hi")
    await h.settle()
    assert (await h.texts_to(PHONE))[0].startswith("Sorry, a technical problem")


class Blocking:
    """Holds the turn of the message "slow" until released; optionally replies first."""

    def __init__(self, reply_first: bool = False) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.reply_first = reply_first
        self.calls: list[str] = []

    async def __call__(self, msg: Incoming) -> None:
        self.calls.append(msg.text)
        if msg.text == "slow":
            if self.reply_first:
                await msg.reply("première partie")
            self.started.set()
            await self.release.wait()
        await msg.reply(f"done {msg.text}")


async def _crash_mid_turn(h: Harness, blocking: Blocking) -> None:
    await h.use_dispatch(blocking)
    await h.make_user(PHONE)
    await h.inbound(PHONE, "slow")
    await asyncio.wait_for(blocking.started.wait(), 5)
    await h.inbound(PHONE, "after")  # waits behind the running turn
    await h.stop_workers()  # the worker dies in the middle of the turn
    async with h.services.sessions() as db:
        statuses = [r.status for r in (await db.scalars(select(InboundMessage).order_by(InboundMessage.id)))]
    assert statuses == ["processing", "pending"]


async def test_restart_in_the_middle_of_a_turn_runs_it_again(make_harness: Any) -> None:
    h = await make_harness(WORKER_LEASE_S="1")
    await _crash_mid_turn(h, Blocking())
    again = Blocking()
    again.release.set()
    await h.start_workers(again)
    await h.settle()
    assert again.calls == ["slow", "after"]  # nothing lost, order kept
    assert await h.texts_to(PHONE) == ["done slow", "done after"]  # nothing answered twice
    async with h.services.sessions() as db:
        rows = (await db.scalars(select(InboundMessage).order_by(InboundMessage.id))).all()
        assert [(r.status, r.attempts) for r in rows] == [("done", 2), ("done", 1)]


async def test_restart_after_a_partial_answer_tells_the_user_instead_of_answering_twice(
    make_harness: Any,
) -> None:
    h = await make_harness(WORKER_LEASE_S="1")
    await _crash_mid_turn(h, Blocking(reply_first=True))
    again = Blocking()
    again.release.set()
    await h.start_workers(again)
    await h.settle()
    assert again.calls == ["after"]
    texts = await h.texts_to(PHONE)
    assert texts[0] == "première partie"
    assert texts[1].startswith("Ma réponse précédente a été interrompue")
    assert texts[2] == "done after"
    async with h.services.sessions() as db:
        first = await db.scalar(select(InboundMessage).order_by(InboundMessage.id))
        assert first is not None and first.status == "failed"
        recorded = (await db.scalars(select(OutboundMessage).order_by(OutboundMessage.id))).all()
        assert recorded[0].inbound_id == first.id


async def test_a_message_that_keeps_crashing_is_given_up_after_three_attempts(make_harness: Any) -> None:
    h = await make_harness(WORKER_LEASE_S="1", MAX_ATTEMPTS="3")
    await h.make_user(PHONE)
    blocking = Blocking()
    await h.use_dispatch(blocking)
    await h.inbound(PHONE, "slow")
    for _ in range(3):
        await asyncio.wait_for(blocking.started.wait(), 10)
        await h.stop_workers()
        blocking.started.clear()
        await h.start_workers(blocking)
    await h.settle()
    [text] = await h.texts_to(PHONE)
    assert text.startswith("Désolé, je n'ai pas réussi à traiter le message « slow »")
    async with h.services.sessions() as db:
        row = await db.scalar(select(InboundMessage))
        assert row is not None and row.status == "failed" and row.attempts == 3


async def test_a_user_lost_from_the_queue_is_found_by_the_sweeper(harness: Harness) -> None:
    h = harness
    recorder = Recorder()
    await h.use_dispatch(recorder)
    user = await h.make_user(PHONE)
    # A row stored without its queue entry (e.g. the process died between the two).
    async with h.services.sessions() as db:
        db.add(InboundMessage(message_sid="SMlost0001", user_id=user.id, channel="whatsapp",
                              from_addr=f"whatsapp:{PHONE}", body="perdu ?", status="pending",
                              created_at=h.clock()))
        await db.commit()
    await h.settle(timeout_s=5)
    assert await h.texts_to(PHONE) == ["echo perdu ?"]
