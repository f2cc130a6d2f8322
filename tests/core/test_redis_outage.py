"""Redis going away mid-turn and coming back: nothing lost, nothing handled twice.

This test runs its own Redis server (on a free port) so that it can stop it without disturbing
the rest of the suite. It needs `redis-server` on the PATH and fails, not skips, without it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from sqlalchemy import select

from bot.clock import system_now
from bot.storage.models import InboundMessage
from tests.support.harness import Harness
from tests.support.processes import RedisServer
from tests.support.stall import StallingRelay
from tests.support.waiting import eventually

PHONE = "+2250701010101"


async def test_redis_down_mid_turn_and_back(
    make_harness: Callable[..., Awaitable[Harness]], own_redis: RedisServer
) -> None:
    h = await make_harness(REDIS_URL=f"redis://127.0.0.1:{own_redis.port}/0", REDIS_KEY_PREFIX="outage:")
    await h.make_user(PHONE, mode="child")
    h.llm.push_text("Première réponse, malgré la panne.", delay_s=1.0)
    h.llm.push_text("Deuxième réponse, après le retour de Redis.")

    status, _ = await h.inbound(PHONE, "Explique-moi les fractions")
    assert status == 200
    await eventually(lambda: _true_if(len(h.llm.requests) >= 1))
    own_redis.stop()  # the turn is waiting on the model: Redis goes away now

    async def first_reply_sent() -> bool:
        return any("Première réponse" in t for t in await h.texts_to(PHONE))

    await eventually(first_reply_sent)

    # Written while Redis is down: stored, acknowledged, and handled once Redis is back.
    status, body = await h.inbound(PHONE, "Et les décimaux ?")
    assert status == 200 and "<Response" in body
    await asyncio.sleep(1.0)
    assert not any("Deuxième" in t for t in await h.texts_to(PHONE))

    own_redis.start()

    async def second_reply_sent() -> bool:
        return any("Deuxième réponse" in t for t in await h.texts_to(PHONE))

    await eventually(second_reply_sent)
    await h.settle()
    texts = await h.texts_to(PHONE)
    assert sum("Première réponse" in t for t in texts) == 1
    assert sum("Deuxième réponse" in t for t in texts) == 1
    assert len(h.llm.requests) == 2
    # Nothing failed in the user's eyes: no apology, no "send it again".
    assert not any("Désolé" in t for t in texts), texts


async def _true_if(value: bool) -> bool:
    return value


async def test_a_stalled_redis_never_lets_a_running_turns_lease_run_out(
    make_harness: Callable[..., Awaitable[Harness]], own_redis: RedisServer
) -> None:
    """Redis hangs without closing anything (a stalled host, a network that drops): renewing the
    user's lock waits, but the message's own lease in the database goes on being extended, so that
    once Redis answers again (the lock gone by then) no worker takes the message over and answers
    it a second time."""
    relay = StallingRelay(own_redis.port)
    await relay.start()
    try:
        h = await make_harness(REDIS_URL=f"redis://127.0.0.1:{relay.port}/0", REDIS_KEY_PREFIX="stall:")
        lease_s = h.settings.worker_lease_s
        await h.make_user(PHONE, mode="child")
        h.llm.push_text("Une seule réponse, malgré Redis figé.", delay_s=lease_s * 2.5)
        assert (await h.inbound(PHONE, "Explique-moi les fractions"))[0] == 200
        await eventually(lambda: _true_if(len(h.llm.requests) >= 1))
        relay.stall()
        stalled_until = time.monotonic() + lease_s * 1.75
        while time.monotonic() < stalled_until:
            async with h.services.sessions() as db:
                row = (await db.scalars(select(InboundMessage))).one()
            assert row.status == "processing" and row.lease_until is not None
            assert row.lease_until > system_now(), "the message's lease ran out while Redis hung"
            await asyncio.sleep(0.2)
        relay.resume()  # the user's lock expired in Redis meanwhile: only the row's lease holds

        async def answered() -> bool:
            return any("Une seule réponse" in t for t in await h.texts_to(PHONE))

        await eventually(answered)
        await asyncio.sleep(lease_s)  # time for a second worker to take the message, if it could
        await h.settle()
        texts = await h.texts_to(PHONE)
        assert sum("Une seule réponse" in t for t in texts) == 1, texts
        assert len(h.llm.requests) == 1
    finally:
        await relay.stop()
