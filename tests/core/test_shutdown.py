"""Graceful shutdown with real signals: `python -m bot serve|worker` processes sent SIGTERM.

`serve` stops listening and still answers the webhook it is reading; a worker ends the turn it is
in (a slow model answer) and claims nothing more, exits 0 within SHUTDOWN_GRACE_S, and a turn
longer than the grace is cut and taken up by another worker; a worker running a background job
hands it back after its current step and another worker finishes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import select, text

from bot.storage.models import InboundMessage
from tests.fakes.llm import Step
from tests.fakes.search import SlowSearch
from tests.support.harness import REDIS_URL, Harness, clear_redis
from tests.support.job_processes import PHONE as JOB_PHONE
from tests.support.job_processes import STEPS, assert_sent_once, steps_done, until
from tests.support.processes import Deployment

GRACE_S = 10
SLOW_S = 3.0  # the model's answer to a message with « lent » in it

# Signals and processes, on each backend (the cluster adds Redis to the sqlite one).


@pytest.fixture
async def cluster(make_harness: Any, tmp_path: Path) -> AsyncIterator[Deployment]:
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    h = await make_harness(REDIS_URL=REDIS_URL, REDIS_KEY_PREFIX=prefix)
    await h.stop_workers()  # only the processes work

    def echo(body: dict[str, Any]) -> Step:
        last = next(m for m in reversed(body["messages"]) if m["role"] == "user")
        content = last["content"] if isinstance(last["content"], str) else str(last["content"])
        line = content.strip().splitlines()[-1]
        return Step("text", content="echo " + line, delay_s=SLOW_S if "lent" in line else 0.0)

    h.llm.responder = echo
    d = Deployment(h, tmp_path, prefix)
    d.env["SHUTDOWN_GRACE_S"] = str(GRACE_S)
    try:
        yield d
    finally:
        d.stop()
        await clear_redis(prefix)


def _terminate(proc: subprocess.Popen[bytes]) -> float:
    """Sends SIGTERM; the moment it was sent."""
    proc.send_signal(signal.SIGTERM)
    return time.monotonic()


async def _exit_code(proc: subprocess.Popen[bytes], timeout_s: float) -> int:
    code = await asyncio.to_thread(proc.wait, timeout_s)
    assert code == 0, proc.stderr.read().decode() if proc.stderr else code
    return code


async def _rows(h: Harness) -> list[tuple[str, str, int]]:
    async with h.services.sessions() as db:
        rows = (await db.scalars(select(InboundMessage).order_by(InboundMessage.id))).all()
    return [(r.body or "", r.status, r.attempts) for r in rows]


async def _until_requests(h: Harness, n: int) -> None:
    for _ in range(400):
        if len(h.llm.requests) >= n:
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"the model was asked {len(h.llm.requests)} times, not {n}")


async def _refuses_connections(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return True
    writer.close()
    return False


@contextlib.asynccontextmanager
async def _inserts_held(h: Harness) -> AsyncIterator[None]:
    """Holds the database's write lock on inbound messages: a webhook waits for it in its handler."""
    url = h.settings.database_url
    if url.startswith("sqlite"):
        lock = sqlite3.connect(url.split(":///", 1)[1], isolation_level=None, check_same_thread=False)
        await asyncio.to_thread(lock.execute, "BEGIN IMMEDIATE")
        try:
            yield
        finally:
            await asyncio.to_thread(lock.execute, "ROLLBACK")
            lock.close()
        return
    async with h.services.engine.connect() as conn:
        await conn.execute(text("LOCK TABLE inbound_messages IN SHARE ROW EXCLUSIVE MODE"))
        try:
            yield
        finally:
            await conn.rollback()


async def test_serve_answers_the_webhook_in_flight_at_sigterm(cluster: Deployment) -> None:
    d, h = cluster, cluster.h
    phone = "+2250710000201"
    await h.make_user(phone)
    await d.start(workers=1)
    assert d.server is not None
    async with aiohttp.ClientSession() as session:
        async with _inserts_held(h):
            webhook = asyncio.create_task(d.inbound(session, phone, "en vol"))
            await asyncio.sleep(0.5)  # its handler waits to store the message
            sent_at = _terminate(d.server)
            for _ in range(100):  # the listening socket is closed first
                if await _refuses_connections(d.port):
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("serve still accepts connections after SIGTERM")
            assert not webhook.done() and d.server.poll() is None  # still on the request in flight
        assert await asyncio.wait_for(webhook, 10) == 200
    await _exit_code(d.server, GRACE_S)
    assert time.monotonic() - sent_at < GRACE_S
    d.server = None
    await h.settle(timeout_s=30)  # the worker answers the message the stopping server stored
    assert await h.texts_to(phone) == ["echo en vol"]
    assert await _rows(h) == [("en vol", "done", 1)]


async def test_a_worker_ends_its_turn_then_exits_and_claims_nothing_more(cluster: Deployment) -> None:
    d, h = cluster, cluster.h
    phone = "+2250710000202"
    await h.make_user(phone)
    await d.start(workers=1)
    [worker] = d.workers
    async with aiohttp.ClientSession() as session:
        assert await d.inbound(session, phone, "réponse lente") == 200
        await _until_requests(h, 1)  # the turn waits for the model's slow answer
        sent_at = _terminate(worker)
        await asyncio.sleep(0.3)
        assert await d.inbound(session, phone, "ensuite") == 200  # arrives while the worker stops
    await _exit_code(worker, GRACE_S + 5)
    took = time.monotonic() - sent_at
    assert took < GRACE_S
    # The turn was finished, not cut: answered once, on its first attempt; the next one waits.
    assert await h.texts_to(phone) == ["echo réponse lente"]
    assert await _rows(h) == [("réponse lente", "done", 1), ("ensuite", "pending", 0)]
    assert len(h.llm.requests) == 1
    d.workers = [d._spawn("worker")]
    await h.settle(timeout_s=30)
    assert await h.texts_to(phone) == ["echo réponse lente", "echo ensuite"]
    assert await _rows(h) == [("réponse lente", "done", 1), ("ensuite", "done", 1)]


async def test_a_turn_longer_than_the_grace_is_cut_and_taken_up_by_another_worker(
    cluster: Deployment,
) -> None:
    d, h = cluster, cluster.h
    d.env["SHUTDOWN_GRACE_S"] = "1"
    phone = "+2250710000203"
    await h.make_user(phone)
    await d.start(workers=1)
    [worker] = d.workers
    async with aiohttp.ClientSession() as session:
        assert await d.inbound(session, phone, "très lent") == 200
    await _until_requests(h, 1)
    _terminate(worker)
    await _exit_code(worker, 10)
    # It did not wait for the model (whose answer takes SLOW_S): nothing was sent, and the row is
    # handed back unanswered. Shown by what happened, not by a wall-clock bound the machine's load
    # decides.
    assert h.twilio.to(f"whatsapp:{phone}") == []
    async with h.services.sessions() as db:
        row = await db.scalar(select(InboundMessage))
        assert row is not None and row.status == "processing"
        assert row.lease_until is not None and row.lease_until.timestamp() < time.time()  # given back
    d.workers = [d._spawn("worker")]
    await h.settle(timeout_s=30)
    assert await h.texts_to(phone) == ["echo très lent"]
    assert await _rows(h) == [("très lent", "done", 2)]


async def test_a_worker_hands_its_background_job_back_and_another_finishes_it(long_work: Any) -> None:
    h, deploy = long_work
    searches = SlowSearch(0.8)
    await searches.start()
    try:
        await _hand_back_and_finish(h, deploy, searches)
    finally:
        await searches.stop()


async def _hand_back_and_finish(h: Harness, deploy: Any, searches: SlowSearch) -> None:
    await h.make_user(JOB_PHONE, mode="pro", credit_balance=100)
    d = deploy()
    d.env.update({"SHUTDOWN_GRACE_S": str(GRACE_S), "TAVILY_BASE_URL": searches.url})
    await d.start(workers=2)
    async with aiohttp.ClientSession() as session:
        assert await d.inbound(session, JOB_PHONE, "Recherche les normes SYSCOHADA et fais le bilan") == 200
    running = await until(h, lambda j: j.status == "running" and steps_done(j) >= 2 and j.worker)
    assert running.worker is not None
    pid = int(running.worker.rsplit(":", 1)[1])
    stopping = next(p for p in d.workers if p.pid == pid)
    begun = searches.count
    for _ in range(200):  # SIGTERM while the job's worker waits for a search
        if searches.count > begun:
            break
        await asyncio.sleep(0.01)
    sent_at = _terminate(stopping)
    await _exit_code(stopping, GRACE_S + 5)
    # Well within the grace: the job stopped after its step and handed itself back (a delivery
    # still running at the grace's end would have been cancelled there).
    assert time.monotonic() - sent_at < GRACE_S
    done = await until(h, lambda j: j.status == "completed", timeout_s=90)
    assert done.attempts == 2 and done.worker != running.worker
    assert steps_done(done) == STEPS
    await assert_sent_once(h, done)
    assert searches.count == STEPS  # the search in flight at SIGTERM was finished, not run again
