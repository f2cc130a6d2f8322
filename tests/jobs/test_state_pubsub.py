"""Publish / subscribe on the shared state, in process and on a real Redis (127.0.0.1:6379 or
TEST_REDIS_URL): a subscriber gets what is published after it subscribed, every subscriber gets
it, closing unsubscribes. Redis not answering fails these tests, it does not skip them."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from bot.storage.state import MemoryState, RedisState, State
from tests.support.harness import REDIS_URL

CHANNEL = "job:7:progress"


@pytest.fixture(params=["memory", "redis"])
async def state(request: pytest.FixtureRequest) -> AsyncIterator[State]:
    if request.param == "memory":
        made: State = MemoryState()
    else:
        made = RedisState(REDIS_URL, prefix=f"test:{uuid.uuid4().hex[:12]}:")
        assert await made.ping(), f"Redis does not answer at {REDIS_URL}"
    try:
        yield made
    finally:
        await made.close()


async def test_a_subscriber_gets_what_is_published_after_it_subscribed(state: State) -> None:
    await state.publish(CHANNEL, "before")  # nobody listens yet: gone
    async with state.subscribe(CHANNEL) as sub:
        await state.publish(CHANNEL, '{"type": "tool_start", "label": "📊 Génération…"}')
        await state.publish(CHANNEL, "second")
        await state.publish("job:8:progress", "another job")
        assert await sub.get(5) == '{"type": "tool_start", "label": "📊 Génération…"}'
        assert await sub.get(5) == "second"
        assert await sub.get(0.3) is None  # neither "before" nor the other channel's message


async def test_every_subscriber_gets_every_message(state: State) -> None:
    async with state.subscribe(CHANNEL) as first, state.subscribe(CHANNEL) as second:
        for n in range(3):
            await state.publish(CHANNEL, f"m{n}")
        assert [await first.get(5) for _ in range(3)] == ["m0", "m1", "m2"]
        assert [await second.get(5) for _ in range(3)] == ["m0", "m1", "m2"]


async def test_closing_unsubscribes_and_ends_iteration(state: State) -> None:
    sub = state.subscribe(CHANNEL)
    await sub.__aenter__()
    received: list[str] = []

    async def read() -> None:
        async for message in sub:
            received.append(message)

    reader = asyncio.create_task(read())
    await state.publish(CHANNEL, "one")
    for _ in range(100):
        if received:
            break
        await asyncio.sleep(0.02)
    await sub.close()
    await asyncio.wait_for(reader, 5)  # iteration ended with the subscription
    assert received == ["one"] and sub.closed
    await state.publish(CHANNEL, "after")
    assert await sub.get(0.2) is None
    assert await _listeners(state, CHANNEL, expected=0) == 0


async def test_redis_channels_carry_the_state_prefix() -> None:
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    mine, other = RedisState(REDIS_URL, prefix=prefix), RedisState(REDIS_URL, prefix=prefix + "x:")
    raw = aioredis.from_url(REDIS_URL, decode_responses=True)
    try:
        assert await mine.ping(), f"Redis does not answer at {REDIS_URL}"
        async with mine.subscribe(CHANNEL) as sub:
            assert await _listeners(mine, CHANNEL, expected=1) == 1
            await other.publish(CHANNEL, "other deployment")
            await raw.publish(prefix + CHANNEL, "raw")
            assert await sub.get(5) == "raw"
            assert await sub.get(0.3) is None
    finally:
        await raw.aclose()
        await mine.close()
        await other.close()


async def _listeners(state: State, channel: str, expected: int) -> int:
    """Subscriptions open on `channel`, as the state itself knows them (Redis: PUBSUB NUMSUB,
    polled up to 2 s for `expected`: Redis drops a closed connection's subscriptions once it sees
    the close)."""
    if isinstance(state, MemoryState):
        return len(state._subscribers.get(channel, ()))
    assert isinstance(state, RedisState)
    count = -1
    for _ in range(100):
        [(_, count)] = await state.redis.pubsub_numsub(state.prefix + channel)
        if count == expected:
            break
        await asyncio.sleep(0.02)
    return int(count)
