"""A job page's event streams within limits: many readers of one job share one pub/sub connection
and cannot starve the webhooks of Redis connections; streams per job and per address are capped
(429 beyond); a stream ends after SSE_MAX_SECONDS and a reconnect carries on from Last-Event-ID;
HEAD answers the headers only."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from bot import jobs
from bot.storage.state import MemoryState, RedisState
from tests.support.harness import Harness
from tests.support.job_page import done, make_job, page_path, read_events, step
from tests.support.waiting import eventually

PHONE = "+2250700000401"
WRITER = "+2250700000402"


def listeners(h: Harness, job_id: int) -> int:
    """Subscriptions this process holds on the job's channel."""
    state, channel = h.services.state, jobs.progress_channel(job_id)
    if isinstance(state, MemoryState):
        return len(state._subscribers.get(channel, ()))
    assert isinstance(state, RedisState)
    return state.hub.listeners(channel)


async def metric(h: Harness, line_start: str) -> float:
    """The value of one series on /metrics (0 when absent)."""
    _, _, body = await h.scrape()
    for line in body.decode().splitlines():
        if line.startswith(line_start + " "):
            return float(line.split()[-1])
    return 0.0


@pytest.mark.postgres_only  # one Redis pub/sub connection for every reader: needs Redis
async def test_twenty_readers_of_one_job_leave_the_webhooks_their_redis(harness: Harness) -> None:
    h = harness
    state = h.services.state
    assert isinstance(state, RedisState), "runs on the postgres backend (Redis)"
    state.redis.connection_pool.max_connections = 8  # a small shared pool: readers must not hold it
    user = await h.make_user(PHONE)
    job = await make_job(h, user, "Un long rapport")
    url = h.base_url + page_path(h, job.id, events=True)
    responses = await asyncio.gather(*(h.session.get(url) for _ in range(20)))
    try:
        statuses = sorted(r.status for r in responses)
        assert statuses == [200] * 5 + [429] * 15
        refused = next(r for r in responses if r.status == 429)
        assert refused.headers["Retry-After"] and "trop de fois" in await refused.text()
        await eventually(lambda: _true(listeners(h, job.id) == 5))
        channel = state.prefix + jobs.progress_channel(job.id)
        [(_, connections)] = await state.redis.pubsub_numsub(channel)
        assert connections == 1  # five readers, one Redis subscriber connection

        # Meanwhile a webhook is stored and answered, and the process says it is ready.
        await h.make_user(WRITER)
        h.llm.push_text("Bonjour, je t'écoute.")
        status, _ = await h.inbound(WRITER, "Bonjour")
        assert status == 200
        await h.settle()
        assert any("je t'écoute" in t for t in await h.texts_to(WRITER))
        status, _, body = await h.get("/readyz")
        assert status == 200, body

        # Every accepted reader gets the live events, then the end.
        await step(h, job.id, 1, "call_a", "web_search")
        await done(h, job.id, "Voilà ton rapport.", [])
        for resp in (r for r in responses if r.status == 200):
            got = await read_events(resp)
            assert [e["type"] for _, e in got] == ["tool_start", "tool_end", "done"]
        await eventually(lambda: _true(listeners(h, job.id) == 0))

        async def unsubscribed() -> bool:  # the last reader gone, the channel is unsubscribed
            [(_, connections)] = await state.redis.pubsub_numsub(channel)
            return connections == 0

        await eventually(unsubscribed)
    finally:
        for resp in responses:
            resp.close()


async def test_streams_per_address_are_capped(make_harness: Callable[..., Awaitable[Harness]]) -> None:
    h = await make_harness(SSE_MAX_PER_ADDRESS="3", SSE_KEEPALIVE_S="0.5")
    user = await h.make_user(PHONE)
    made = [await make_job(h, user, f"Demande {n}") for n in range(4)]
    refused_before = await metric(h, 'deblo_job_streams_refused_total{limit="address"}')
    opened = [await h.session.get(h.base_url + page_path(h, job.id, events=True)) for job in made[:3]]
    try:
        assert [r.status for r in opened] == [200, 200, 200]
        assert await metric(h, "deblo_job_streams") >= 3
        status, _, body = await h.get(page_path(h, made[3].id, events=True))
        assert status == 429 and "too many times" in body.decode()  # another job, the same address
        refused = await metric(h, 'deblo_job_streams_refused_total{limit="address"}')
        assert refused == refused_before + 1
        opened.pop(0).close()  # one reader leaves: its place is free again once the server sees it
        # (at the stream's next keep-alive write, at most SSE_KEEPALIVE_S later)
        await eventually(lambda: _true(listeners(h, made[0].id) == 0), timeout_s=25)
        async with h.session.get(h.base_url + page_path(h, made[3].id, events=True)) as resp:
            assert resp.status == 200
    finally:
        for resp in opened:
            resp.close()


async def test_behind_a_trusted_proxy_one_readers_streams_leave_the_others_theirs(
    make_harness: Callable[..., Awaitable[Harness]],
) -> None:
    h = await make_harness(TRUSTED_PROXIES="127.0.0.1", SSE_MAX_PER_JOB="30", SSE_KEEPALIVE_S="0.5")
    user = await h.make_user(PHONE)
    job = await make_job(h, user, "Un long rapport")
    url = h.base_url + page_path(h, job.id, events=True)

    def through_proxy(browser: str, claimed: str = "") -> dict[str, str]:
        """What the proxy on 127.0.0.1 passes on: what the browser wrote, then the browser's address."""
        return {"X-Forwarded-For": f"{claimed}, {browser}" if claimed else browser}

    # One browser's 21 streams: the 21st is refused, whatever address it claims to be.
    first = [await h.session.get(url, headers=through_proxy("203.0.113.9")) for _ in range(20)]
    opened = list(first)
    try:
        assert [r.status for r in first] == [200] * 20
        status, _, _ = await h.get(page_path(h, job.id, events=True),
                                   headers=through_proxy("203.0.113.9", claimed="198.51.100.7"))
        assert status == 429
        # Another browser behind the same proxy still gets its stream.
        other = await h.session.get(url, headers=through_proxy("198.51.100.7"))
        opened.append(other)
        assert other.status == 200
    finally:
        for resp in opened:
            resp.close()


async def test_a_stream_ends_after_its_time_and_a_reconnect_gets_the_rest(
    make_harness: Callable[..., Awaitable[Harness]],
) -> None:
    h = await make_harness(SSE_MAX_SECONDS="0.5")
    user = await h.make_user(PHONE)
    job = await make_job(h, user, "Un rapport")
    first = await step(h, job.id, 1, "call_a", "web_search")
    url = h.base_url + page_path(h, job.id, events=True)
    async with h.session.get(url) as resp:
        got = await read_events(resp)  # returns only once the server has ended the stream
        assert resp.content.at_eof()
    assert [e for _, e in got] == first  # no `done`: the job still runs, the stream just ended
    await eventually(lambda: _true(listeners(h, job.id) == 0))
    second = await step(h, job.id, 2, "call_b", "generate_pdf")
    await done(h, job.id, "Fini.", [])
    async with h.session.get(url, headers={"Last-Event-ID": str(got[-1][0])}) as resp:
        rest = await read_events(resp)
    assert [e for _, e in rest][:2] == second
    assert [e["type"] for _, e in rest] == ["tool_start", "tool_end", "done"]


async def test_head_on_the_stream_answers_headers_only(
    make_harness: Callable[..., Awaitable[Harness]],
) -> None:
    h = await make_harness(SSE_MAX_PER_JOB="1")
    user = await h.make_user(PHONE)
    job = await make_job(h, user, "Un rapport")
    for _ in range(3):
        status, headers, body = await h.get(page_path(h, job.id, events=True), method="HEAD")
        assert status == 200 and body == b""
        assert headers["Content-Type"].startswith("text/event-stream")
        assert headers["Cache-Control"] == "no-store"
    status, _, _ = await h.get(page_path(h, job.id, sig="bad", events=True), method="HEAD")
    assert status == 403
    # The HEADs held nothing: the one stream this job may have is still free, and it alone listens.
    async with h.session.get(h.base_url + page_path(h, job.id, events=True)) as resp:
        assert resp.status == 200
        await step(h, job.id, 1, "call_a", "web_search")
        await read_events(resp, count=2)
        assert listeners(h, job.id) == 1


async def _true(value: bool) -> bool:
    return value
