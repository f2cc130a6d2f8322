"""The deployment with Redis: one `serve` and several `worker` processes, killed and restarted.

These run the real command line (`python -m bot serve|worker`) as processes on the test database,
with Redis as the shared queue and state (whatever the test's backend), and the fake Twilio and LLM
of a harness whose own workers are stopped.
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import select

from bot.storage.models import InboundMessage
from tests.fakes.llm import Step
from tests.support.harness import REDIS_URL, clear_redis
from tests.support.processes import Deployment


@pytest.fixture
async def deployment(make_harness: Any, tmp_path: Path) -> AsyncIterator[Deployment]:
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    h = await make_harness(REDIS_URL=REDIS_URL, REDIS_KEY_PREFIX=prefix)
    await h.stop_workers()  # only the worker processes work

    def echo(body: dict[str, Any]) -> Step:
        last = next(m for m in reversed(body["messages"]) if m["role"] == "user")
        content = last["content"] if isinstance(last["content"], str) else str(last["content"])
        return Step("text", content="echo " + content.strip().splitlines()[-1])

    h.llm.responder = echo
    d = Deployment(h, tmp_path, prefix)
    try:
        yield d
    finally:
        d.stop()
        await clear_redis(prefix)


def _tokens(texts: list[str], tag: str) -> list[str]:
    return [word for text in texts for word in text.split() if word.startswith(tag)]


async def test_serve_and_two_workers_keep_each_users_order(deployment: Deployment) -> None:
    d, h = deployment, deployment.h
    phones = [f"+22507100000{i:02d}" for i in range(5)]
    for phone in phones:
        await h.make_user(phone)
    await d.start(workers=2)
    async with aiohttp.ClientSession() as session:
        for n in range(6):
            sends = (d.inbound(session, p, f"q{i}-{n}") for i, p in enumerate(phones))
            statuses = await asyncio.gather(*sends)
            assert set(statuses) == {200}
    await h.settle(timeout_s=60)
    for i, phone in enumerate(phones):
        texts = await h.texts_to(phone)
        assert _tokens(texts, f"q{i}-") == [f"q{i}-{n}" for n in range(6)], texts
    async with h.services.sessions() as db:
        rows = (await db.scalars(select(InboundMessage))).all()
    assert len(rows) == 30 and {r.status for r in rows} == {"done"} and {r.attempts for r in rows} == {1}


async def test_workers_killed_mid_turn_then_restarted(deployment: Deployment) -> None:
    d, h = deployment, deployment.h
    phone = "+2250710000099"
    await h.make_user(phone)
    await d.start(workers=2)
    h.llm.push_hang(4)  # the first turn gets no answer from the model before the crash
    async with aiohttp.ClientSession() as session:
        assert await d.inbound(session, phone, "bloque") == 200
        for _ in range(200):
            if h.llm.requests:
                break
            await asyncio.sleep(0.05)
        assert h.llm.requests, "the turn did not start"
        assert await d.inbound(session, phone, "ensuite") == 200
    for proc in d.workers:
        proc.send_signal(signal.SIGKILL)  # a crash: no cleanup, the user's lock stays in Redis
        proc.wait()
    async with h.services.sessions() as db:
        statuses = [r.status for r in (await db.scalars(select(InboundMessage).order_by(InboundMessage.id)))]
    assert statuses == ["processing", "pending"]
    d.workers = [d._spawn("worker")]
    await h.settle(timeout_s=60)
    texts = await h.texts_to(phone)
    assert _tokens(texts, "bloque") == ["bloque"] and _tokens(texts, "ensuite") == ["ensuite"]
    assert texts.index("echo bloque") < texts.index("echo ensuite")
    async with h.services.sessions() as db:
        rows = (await db.scalars(select(InboundMessage).order_by(InboundMessage.id))).all()
    assert [(r.status, r.attempts) for r in rows] == [("done", 2), ("done", 1)]
