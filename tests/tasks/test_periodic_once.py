"""Periodic work runs once per period across processes: several pipelines, each with its own
services (database engine, Redis connections, scheduler), on one database and one Redis, as
`worker` processes are. A job runs in one of them each period; due reminders, a parent's weekly
summary and daily digest are each sent exactly once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from bot.assistant.tasks import create, reminder_jobs
from bot.channel import formatting
from bot.cli import dispatch_function
from bot.learning.progress import weekly_summary_jobs
from bot.periodic import Job
from bot.pipeline.retention import retention_jobs
from bot.pipeline.workers import Pipeline
from bot.storage.models import ParentLink, ScheduledSend
from tests.support.harness import REDIS_URL, Harness, clear_redis
from tests.support.pedagogy import MONDAY, SUNDAY_SLOT

INTERVAL_S = 0.2
# The counted job's period: a tick starts at its period's boundary plus the claim's round trip, so
# a run is attributed to the nearest boundary; half a period absorbs a loaded machine's delays.
COUNTED_S = 0.3
STUDENT = "+2250700000001"
PARENT = "+2250700000009"
Processes = Callable[[int], Awaitable[list[Harness]]]


@pytest.fixture
async def processes(make_harness: Any) -> AsyncIterator[Processes]:
    """`processes(n)`: n harnesses sharing the database, Redis (one key prefix) and the first one's
    Twilio stand-in, so that every send is seen in one place."""
    prefix = f"test:{uuid.uuid4().hex[:12]}:"

    async def make(n: int) -> list[Harness]:
        first = await make_harness(REDIS_URL=REDIS_URL, REDIS_KEY_PREFIX=prefix)
        same_twilio = {"TWILIO_API_BASE_URL": first.twilio.url,
                       "TWILIO_ACCOUNT_SID": first.twilio.account_sid,
                       "TWILIO_AUTH_TOKEN": first.twilio.auth_token}
        return [first] + [await make_harness(REDIS_URL=REDIS_URL, REDIS_KEY_PREFIX=prefix, **same_twilio)
                          for _ in range(n - 1)]

    try:
        yield make
    finally:
        await clear_redis(prefix)


async def _run_jobs(hs: list[Harness], jobs: Callable[[int], list[Job]],
                    seconds: float) -> tuple[float, float]:
    """Each harness's pipeline, with `jobs(i)` as its periodic jobs, runs for `seconds`; returns when
    all of them had started and when they were told to stop (wall clock)."""
    for i, h in enumerate(hs):
        await h.stop_workers()
        settings = dataclasses.replace(h.settings, jobs_enabled=True)
        services = dataclasses.replace(h.services, settings=settings)
        h.pipeline = Pipeline(services, dispatch_function(), jobs=jobs(i))
    await asyncio.gather(*(h.pipeline.start() for h in hs))
    started = time.time()
    await asyncio.sleep(seconds)
    stopped = time.time()
    await asyncio.gather(*(h.pipeline.stop() for h in hs))
    return started, stopped


async def test_a_job_runs_once_per_period_whatever_the_number_of_processes(processes: Processes) -> None:
    hs = await processes(3)
    runs: list[tuple[int, float]] = []

    def counted(i: int) -> list[Job]:
        async def tick(services: Any, now: datetime) -> None:
            runs.append((i, time.time()))

        return [Job(name="counted", interval_s=COUNTED_S, fn=tick)]

    started, stopped = await _run_jobs(hs, counted, 4.2)
    periods = [round(at / COUNTED_S) for _, at in runs]
    assert len(periods) == len(set(periods)), sorted(periods)  # never twice in one period
    # …and every period that began while all three ran (and not in stop's last half period) was run,
    # in one process or another.
    every = range(int(started // COUNTED_S) + 1, int((stopped - COUNTED_S / 2) // COUNTED_S) + 1)
    assert len(every) >= 12 and set(every) <= set(periods), (list(every), sorted(periods))


async def test_due_reminders_and_a_weekly_summary_go_once_from_two_processes(processes: Processes) -> None:
    hs = await processes(2)
    first = hs[0]
    for h in hs:
        h.clock.now = MONDAY
    # The student wrote on WhatsApp this Sunday: reminders go inside the 24 h window.
    student = await first.make_user(STUDENT, display_name="Awa", last_inbound_at=SUNDAY_SLOT,
                                    last_whatsapp_inbound_at=SUNDAY_SLOT)
    parent = await first.make_user(PARENT, mode="pro", last_channel="sms", last_whatsapp_inbound_at=None)
    async with first.services.sessions() as db:
        db.add(ParentLink(student_id=student.id, parent_id=parent.id, status="confirmed",
                          confirmed_at=MONDAY))
        await db.commit()
    titles = ["Rendre le devoir", "Réviser les fractions", "Exposé"]
    for n, title in enumerate(titles):
        await create(first.services, student.id, title=title, due_date="2026-03-08", due_time=f"18:{3 + n}0")
    for h in hs:
        h.clock.now = SUNDAY_SLOT + timedelta(minutes=5)  # the summary's slot, the tasks due within the hour

    def every_job(_: int) -> list[Job]:
        return [*reminder_jobs(INTERVAL_S), *weekly_summary_jobs(INTERVAL_S), *retention_jobs(INTERVAL_S)]

    await _run_jobs(hs, every_job, 2.0)  # ten periods: each process tries every job ten times
    await first.twilio.idle()
    for h in hs[1:]:
        assert h.twilio.sent == []  # all sends went to the shared stand-in
    reminders = [m["Body"] for m in first.twilio.to(f"whatsapp:{STUDENT}")]
    assert sorted(b.split("«")[1].split("»")[0].strip() for b in reminders) == sorted(titles), reminders
    to_parent = [m["Body"] for m in first.twilio.to(PARENT)]
    assert len(to_parent) == 2, to_parent
    assert sum("Awa" in b and "semaine" in b for b in to_parent) == 1, to_parent  # the weekly summary
    [digest] = [b for b in to_parent if "taches du jour" in b]  # the daily digest, GSM-7: cheaper
    # A usual day of one child, its footer included, is one segment.
    assert digest.endswith("STOP pour arreter") and formatting.sms_cost(digest) == 1, digest
    async with first.services.sessions() as db:
        sends = (await db.scalars(select(ScheduledSend))).all()
    kinds = ["reminder_lead"] * 3 + ["parent_summary", "parent_digest"]
    assert sorted(s.kind for s in sends) == sorted(kinds)
    assert {(s.status, s.attempts) for s in sends} == {("sent", 1)}
