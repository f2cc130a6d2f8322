"""The shared state's subscriptions on a Redis of this test's own (redis-server on a free port, so
its connections can be counted and it can be stopped): however many subscriptions on however many
channels, one pub/sub connection; when Redis goes away every subscription ends, and once it is
back a new one works. And the stream limits' settings refuse bad values, naming the variable."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import pytest
import redis.asyncio as aioredis

from bot.config import ConfigError, load_settings
from bot.storage.state import RedisState
from tests.support.processes import RedisServer


async def _pubsub_connections(raw: aioredis.Redis) -> int:
    return len(await raw.client_list(_type="pubsub"))


async def test_every_subscription_shares_one_connection(own_redis: RedisServer) -> None:
    url = f"redis://127.0.0.1:{own_redis.port}/0"
    state, raw = RedisState(url, prefix="hub:"), aioredis.from_url(url, decode_responses=True)
    try:
        async with AsyncExitStack() as stack:
            subs = [await stack.enter_async_context(state.subscribe(f"job:{n % 3}:progress"))
                    for n in range(12)]
            assert await _pubsub_connections(raw) == 1
            await state.publish("job:1:progress", "un")
            for n, sub in enumerate(subs):
                assert await sub.get(0.3 if n % 3 != 1 else 5) == ("un" if n % 3 == 1 else None)
            [(_, listening)] = await raw.pubsub_numsub("hub:job:1:progress")
            assert listening == 1
        # all closed: every channel unsubscribed (once Redis has read the UNSUBSCRIBEs)
        for _ in range(100):
            if not await raw.pubsub_channels("hub:*"):
                break
            await asyncio.sleep(0.02)
        assert await raw.pubsub_channels("hub:*") == []
        assert state.hub.listeners("job:1:progress") == 0
    finally:
        await raw.aclose()
        await state.close()


async def test_redis_going_away_ends_the_subscriptions_and_a_new_one_works_once_back(
    own_redis: RedisServer,
) -> None:
    state = RedisState(f"redis://127.0.0.1:{own_redis.port}/0", prefix="hub:")
    try:
        async with state.subscribe("job:1:progress") as first, state.subscribe("job:2:progress") as second:
            own_redis.stop()
            assert await first.get(10) is None and first.closed  # the end, not a wait for ever
            assert await second.get(10) is None and second.closed
        own_redis.start()
        async with state.subscribe("job:1:progress") as again:
            await state.publish("job:1:progress", "de retour")
            assert await again.get(5) == "de retour"
    finally:
        await state.close()


@pytest.mark.parametrize(("name", "value", "said"), [
    ("SSE_MAX_PER_JOB", "0", "SSE_MAX_PER_JOB must be 1 or more"),
    ("SSE_MAX_PER_ADDRESS", "beaucoup", "SSE_MAX_PER_ADDRESS must be a whole number"),
    ("SSE_MAX_SECONDS", "0", "SSE_MAX_SECONDS must be more than 0"),
    ("SSE_RETRY_MS", "0", "SSE_RETRY_MS must be 1 or more"),
    ("SSE_REFUSED_RETRY_MS", "bientôt", "SSE_REFUSED_RETRY_MS must be a whole number"),
])
def test_bad_stream_limits_are_refused_by_name(name: str, value: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        load_settings({name: value})
    settings = load_settings({})
    assert (settings.sse_max_per_job, settings.sse_max_per_address, settings.sse_max_seconds) == (5, 20, 600)
    assert (settings.sse_keepalive_s, settings.sse_retry_ms, settings.sse_refused_retry_ms) == (
        15, 3000, 15000)
