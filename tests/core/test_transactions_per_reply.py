"""The database work of one answer, counted from the inbound webhook to the reply's last status
callback (its callbacks sent and delivered): a plain answer (one model call, one reply) takes at most
7 transactions, an answer after two tool calls (three model calls) at most 9; the statements of each
are held too, per backend. No model call is made while the turn holds a pool connection: the reads of
a step's read-only tools end their transaction before the next call, which costs the ninth.

Counts are deterministic where times are not: the harness's background rounds (sweeper, outbox,
job sweeper, lease renewal) are set far apart so that only the message's own work falls in the
window, and the waiting is done on the fakes, never by reading the database.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from sqlalchemy import select

from bot.storage import counting
from bot.storage.models import User
from tests.support.harness import Harness
from tests.support.waiting import eventually

MAX_TRANSACTIONS = 7
# A plain answer's statements, the session's first message (it opens the session) and a later one.
MAX_STATEMENTS = {"sqlite": (29, 23), "postgres": (28, 22)}
# Two calls of a tool that only reads: 8 while their reads' transaction stayed open, and a pool
# connection taken, across the next model call; PostgreSQL's connections ran out at 32 turns a worker.
THREE_CALLS_TRANSACTIONS = 9
THREE_CALLS_STATEMENTS = {"sqlite": 25, "postgres": 24}
QUIET = {"SWEEP_INTERVAL_S": "3600", "OUTBOX_POLL_S": "3600", "JOB_SWEEP_INTERVAL_S": "3600",
         "WORKER_LEASE_S": "600"}


def rounds_ended(h: Harness) -> Callable[[], bool]:
    """Whether a worker's round on a user (claims, turns, the last look for more) ended since this
    was called: the worker's own end, where `pipeline.active` is given up before its last read."""
    ended: list[int] = []
    original = h.pipeline.process_user

    async def process_user(user_id: int) -> None:
        try:
            await original(user_id)
        finally:
            ended.append(user_id)

    h.pipeline.process_user = process_user  # type: ignore[method-assign]
    return lambda: bool(ended)


async def answered(h: Harness, phone: str, body: str) -> counting.Totals:
    """What one message costs the database, from its webhook to its reply's last callback. The
    callbacks are held until the worker is done, so that they never race the sender's own record
    of the reply (a race would add a retry, and the count would depend on the machine's speed)."""
    h.llm.push_text("Une réponse simple.")
    sent_before, callbacks_before = len(h.twilio.sent), len(h.twilio.callbacks)
    h.twilio.callbacks_after = asyncio.Event()
    ended = rounds_ended(h)
    with counting.record() as counts:
        status, _ = await h.inbound(phone, body)
        assert status == 200

        async def done() -> bool:
            return len(h.twilio.sent) > sent_before and ended()

        await eventually(done)
        h.twilio.callbacks_after.set()
        await h.twilio.idle()
    assert [m["Body"] for m in h.twilio.sent[sent_before:]] == ["Une réponse simple."]
    assert [c["MessageStatus"] for c in h.twilio.callbacks[callbacks_before:]] == ["sent", "delivered"]
    return counts


@pytest.fixture
async def quiet(make_harness: Callable[..., Awaitable[Harness]]) -> Harness:
    h = await make_harness(**QUIET)
    # The background loops make their first pass as they start (the outbox looks for sends left
    # over): the counts are taken once the database has been still for a moment, so that pass is
    # never counted as the message's.
    while True:
        start = counting.totals()
        await asyncio.sleep(0.3)
        if counting.since(start).transactions == 0:
            return h


@pytest.mark.parametrize("mode", ["child", "guest"])
async def test_a_plain_answer_takes_at_most_seven_transactions(quiet: Harness, mode: str,
                                                              backend_name: str) -> None:
    h = quiet
    phone = "+2250700002801"
    await h.make_user(phone, mode=mode)
    first = await answered(h, phone, "Bonjour")  # the session's first message opens it
    later = await answered(h, phone, "Combien font 2 + 3 ?")
    print(f"{mode}: {first} then {later}")
    for counts, most in zip((first, later), MAX_STATEMENTS[backend_name], strict=True):
        assert 0 < counts.transactions <= MAX_TRANSACTIONS, counts
        assert counts.transactions <= counts.statements <= most, counts


async def test_an_answer_after_two_tool_calls_takes_at_most_nine_transactions_and_no_connection_across_a_call(
        quiet: Harness, backend_name: str) -> None:
    h = quiet
    phone = "+2250700002802"
    await h.make_user(phone, mode="child")
    await answered(h, phone, "Bonjour")
    requests = len(h.llm.requests)
    pool = h.services.engine.sync_engine.pool
    held: list[int] = []  # the pool's connections in use as each model call arrives
    idle = pool.checkedout()  # type: ignore[attr-defined]  # what the rest of the process holds (PostgreSQL: 1)
    h.llm.on_request = lambda _body: held.append(pool.checkedout())  # type: ignore[attr-defined]
    for _ in range(2):
        h.llm.push_tool_calls(("list_user_files", {}))
    counts = await answered(h, phone, "Quels fichiers ai-je envoyés ?")
    print(f"three calls: {counts}")
    assert len(h.llm.requests) - requests == 3
    assert held == [idle] * 3  # the turn holds none of them while the model answers
    last = h.llm.requests[-1]["messages"]
    asked = max(n for n, m in enumerate(last) if m["role"] == "user")
    assert [m["role"] for m in last[asked + 1:]] == ["assistant", "tool", "assistant", "tool"]
    assert counts.transactions <= THREE_CALLS_TRANSACTIONS, counts
    assert counts.statements <= THREE_CALLS_STATEMENTS[backend_name], counts


async def test_the_counter_sees_one_more_transaction(quiet: Harness) -> None:
    h = quiet
    await h.stop_workers()  # their rounds (the outbox's first one) are not this test's
    with counting.record() as none:
        pass
    with counting.record() as one:
        async with h.services.sessions() as db:
            await db.scalar(select(User.id).limit(1))
    with counting.record() as two:
        for _ in range(2):
            async with h.services.sessions() as db:
                await db.scalar(select(User.id).limit(1))
                await db.scalar(select(User.id).limit(1))
    assert (none.transactions, none.statements) == (0, 0)
    assert (one.transactions, two.transactions) == (1, 2)
    assert two.statements - one.statements == 3


def _scraped(text: str, name: str) -> float:
    return next(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " "))


async def test_the_counts_are_metrics(quiet: Harness) -> None:
    status, _, body = await quiet.scrape()
    text = body.decode()
    assert status == 200
    first = _scraped(text, "deblo_db_transactions_total")
    async with quiet.services.sessions() as db:
        await db.scalar(select(User.id).limit(1))
    _, _, body = await quiet.scrape()
    assert _scraped(body.decode(), "deblo_db_transactions_total") >= first + 1
    assert _scraped(body.decode(), "deblo_db_statements_total") > 0
