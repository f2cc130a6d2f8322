"""The periodic jobs do not die, and proactive sends go at least once and never twice.

Errors are real ones: Redis that does not answer (a state on a closed port), a database whose
table is gone for a while, a row that cannot be rendered, Twilio refusing (the stand-in's
injectable failures). The only injected fault is a job in the job list that always raises.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import select, text, update

from bot.assistant.tasks import _plan_reminders, create, reminder_jobs, send_due_reminders
from bot.config import ConfigError, load_settings
from bot.periodic import Job
from bot.pipeline.scheduler import run_jobs
from bot.storage.models import ScheduledSend, Task
from bot.storage.state import RedisState

STUDENT = "+2250700000001"
OTHER = "+2250700000003"
START = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)


def runs(job: str, result: str) -> float:
    return REGISTRY.get_sample_value("deblo_job_runs_total", {"job": job, "result": result}) or 0.0


async def until(condition: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
    """Waits for `condition` (a guard against hanging, not a timing assertion)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"still waiting for: {what}")
        await asyncio.sleep(0.02)


def bodies(h, address: str) -> list[str]:
    return [m.get("Body", "") for m in h.twilio.to(address)]


async def remind(h) -> int:
    count = await send_due_reminders(h.services, h.clock())
    await h.twilio.idle()
    return count


async def rows(h) -> list[ScheduledSend]:
    async with h.services.sessions() as db:
        return list(await db.scalars(select(ScheduledSend).order_by(ScheduledSend.id)))


async def rename_tasks(h, old: str, new: str) -> None:
    async with h.services.engine.begin() as conn:
        await conn.execute(text(f"ALTER TABLE {old} RENAME TO {new}"))


async def test_the_loop_survives_redis_database_and_row_errors_and_sends_each_reminder_once(
    make_harness,
) -> None:
    h = await make_harness(SCHEDULED_SEND_BACKOFF_S="0", SCHEDULED_SEND_ATTEMPTS="3")
    h.clock.now = START
    student = await h.make_user(STUDENT)
    for n in range(3):
        await create(h.services, student.id, title=f"Tâche {n}", due_date="2026-03-10", due_time=f"10:3{n}")
    # One bad row: due in year 1 for someone in New York, its local time cannot be computed.
    other = await h.make_user(OTHER, timezone="America/New_York")
    async with h.services.sessions() as db:
        db.add(Task(user_id=other.id, title="Impossible", due_at=datetime(1, 1, 1, 0, 30, tzinfo=UTC),
                    lead_reminder_sent_at=START, created_at=START))
        await db.commit()
    h.clock.advance(hours=1)

    async def always_fails(services, now) -> None:
        raise RuntimeError("injected fault")

    jobs = [*reminder_jobs(interval_s=0.02), Job(name="injected_fault", interval_s=0.02, fn=always_fails)]
    scheduler = dataclasses.replace(h.services)
    dead_redis = RedisState("redis://127.0.0.1:1/0", prefix="test-dead:")
    scheduler.state = dead_redis  # Redis away: the job's own claim fails
    stopping = asyncio.Event()
    loop = asyncio.create_task(run_jobs(scheduler, jobs, stopping))
    try:
        failed = runs("task_reminders", "failed")
        await until(lambda: runs("task_reminders", "failed") >= failed + 2, "ticks failing on Redis")
        assert h.twilio.sent == []

        scheduler.state = h.services.state  # Redis back, the database loses the tasks table
        await rename_tasks(h, "tasks", "tasks_away")
        try:
            failed = runs("task_reminders", "failed")
            await until(lambda: runs("task_reminders", "failed") >= failed + 2, "ticks failing on the DB")
            assert h.twilio.sent == []
        finally:
            await rename_tasks(h, "tasks_away", "tasks")

        await until(lambda: len(h.twilio.to(f"whatsapp:{STUDENT}")) >= 3, "the three reminders")
        ok = runs("task_reminders", "ok")
        await until(lambda: runs("task_reminders", "ok") >= ok + 5, "more ticks after the sends")
        assert runs("injected_fault", "failed") >= 5  # failing all along, next to the others
        assert not loop.done()
    finally:
        stopping.set()
        await loop  # ends when asked, with no error
        await dead_redis.close()
    await h.twilio.idle()
    titles = sorted(b.split("«")[1].split("»")[0].strip() for b in bodies(h, f"whatsapp:{STUDENT}"))
    assert titles == ["Tâche 0", "Tâche 1", "Tâche 2"]  # each once
    assert h.twilio.to(OTHER) == []
    by_status = {(r.user_id, r.status) for r in await rows(h)}
    assert by_status == {(student.id, "sent"), (other.id, "failed")}
    [bad] = [r for r in await rows(h) if r.user_id == other.id]
    assert bad.attempts == 3 and "OverflowError" in (bad.last_error or "")


async def test_a_failed_send_is_retried_after_the_backoff_then_sent_once(make_harness) -> None:
    h = await make_harness(TWILIO_SEND_ATTEMPTS="1", SCHEDULED_SEND_BACKOFF_S="60")
    h.clock.now = START
    user = await h.make_user(STUDENT)
    await create(h.services, user.id, title="Piscine", due_date="2026-03-10", due_time="10:30")
    h.clock.advance(minutes=30)
    h.twilio.fail_next("429")
    requests = h.twilio.requests
    assert await remind(h) == 0
    assert h.twilio.requests == requests + 1 and h.twilio.sent == []
    [row] = await rows(h)
    assert row.status == "pending" and row.attempts == 1
    assert row.next_attempt_at == h.clock() + timedelta(seconds=60)
    h.clock.advance(seconds=59)
    assert await remind(h) == 0  # not before the backoff
    assert h.twilio.requests == requests + 1
    h.clock.advance(seconds=1)
    assert await remind(h) == 1
    for _ in range(3):
        h.clock.advance(minutes=10)
        assert await remind(h) == 0
    [sent] = bodies(h, f"whatsapp:{STUDENT}")
    assert "Piscine" in sent and h.twilio.requests == requests + 2
    [row] = await rows(h)
    assert row.status == "sent" and row.attempts == 2


async def test_bounded_retries_with_doubling_backoff_end_as_failed(make_harness) -> None:
    h = await make_harness(TWILIO_SEND_ATTEMPTS="1", SCHEDULED_SEND_ATTEMPTS="3",
                           SCHEDULED_SEND_BACKOFF_S="10")
    h.clock.now = START
    user = await h.make_user(STUDENT)
    await create(h.services, user.id, title="Piscine", due_date="2026-03-10", due_time="10:30")
    h.clock.advance(minutes=30)
    h.twilio.fail_next("429", times=10)
    requests = h.twilio.requests
    await remind(h)  # attempt 1
    h.clock.advance(seconds=10)
    await remind(h)  # attempt 2, the next one 20 s later
    h.clock.advance(seconds=19)
    await remind(h)
    assert h.twilio.requests == requests + 2
    h.clock.advance(seconds=1)
    await remind(h)  # attempt 3, the last
    h.clock.advance(days=1)
    assert await remind(h) == 0
    assert h.twilio.requests == requests + 3 and h.twilio.sent == []
    [row] = await rows(h)
    assert row.status == "failed" and row.attempts == 3 and "Too Many Requests" in (row.last_error or "")


async def test_a_refusal_for_good_is_not_retried(make_harness) -> None:
    h = await make_harness(TWILIO_SEND_ATTEMPTS="1", SCHEDULED_SEND_BACKOFF_S="1")
    h.clock.now = START
    user = await h.make_user(STUDENT)
    await create(h.services, user.id, title="Piscine", due_date="2026-03-10", due_time="10:30")
    h.clock.advance(minutes=30)
    h.twilio.fail_next("400")  # 21211, not a valid number: trying again would not help
    requests = h.twilio.requests
    await remind(h)
    h.clock.advance(hours=1)
    await remind(h)
    assert h.twilio.requests == requests + 1
    [row] = await rows(h)
    assert row.status == "failed" and row.attempts == 1


async def test_a_claim_left_by_a_worker_that_died_is_retried_once_it_expires(make_harness) -> None:
    h = await make_harness(SCHEDULED_SEND_CLAIM_S="300")
    h.clock.now = START
    user = await h.make_user(STUDENT)
    await create(h.services, user.id, title="Piscine", due_date="2026-03-10", due_time="10:30")
    h.clock.advance(minutes=30)
    await _plan_reminders(h.services, h.clock())
    async with h.services.sessions() as db:  # what a worker that died after claiming leaves behind
        await db.execute(update(ScheduledSend).values(
            status="sending", attempts=1, claimed_until=h.clock() + timedelta(seconds=300)))
        await db.commit()
    assert await remind(h) == 0  # still claimed
    h.clock.advance(seconds=301)
    assert await remind(h) == 1
    assert await remind(h) == 0
    assert len(bodies(h, f"whatsapp:{STUDENT}")) == 1


async def test_a_claim_that_expires_on_the_last_attempt_ends_as_failed(make_harness) -> None:
    h = await make_harness(SCHEDULED_SEND_CLAIM_S="300", SCHEDULED_SEND_ATTEMPTS="2")
    h.clock.now = START
    user = await h.make_user(STUDENT)
    await create(h.services, user.id, title="Piscine", due_date="2026-03-10", due_time="10:30")
    h.clock.advance(minutes=30)
    await _plan_reminders(h.services, h.clock())
    async with h.services.sessions() as db:
        await db.execute(update(ScheduledSend).values(
            status="sending", attempts=2, claimed_until=h.clock() + timedelta(seconds=300)))
        await db.commit()
    h.clock.advance(seconds=301)
    assert await remind(h) == 0
    assert h.twilio.sent == []
    [row] = await rows(h)
    assert row.status == "failed" and "last attempt" in (row.last_error or "")


@pytest.mark.parametrize(
    ("name", "value", "error"),
    [
        ("SCHEDULED_SEND_ATTEMPTS", "0", "SCHEDULED_SEND_ATTEMPTS must be 1 or more"),
        ("SCHEDULED_SEND_ATTEMPTS", "many", "SCHEDULED_SEND_ATTEMPTS must be a whole number"),
        ("SCHEDULED_SEND_BACKOFF_S", "-1", "SCHEDULED_SEND_BACKOFF_S must be 0 or more"),
        ("SCHEDULED_SEND_CLAIM_S", "0", "SCHEDULED_SEND_CLAIM_S must be more than 0"),
        ("PARENT_DIGEST_HOUR", "24", "PARENT_DIGEST_HOUR must be an hour from 0 to 23"),
    ],
)
def test_bad_settings_are_refused_by_name(tmp_path, name: str, value: str, error: str) -> None:
    env = {"DATA_DIR": str(tmp_path), "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'x.db'}", name: value}
    with pytest.raises(ConfigError, match=error):
        load_settings(env)


def test_defaults(tmp_path) -> None:
    settings = load_settings({"DATA_DIR": str(tmp_path)})
    assert (settings.scheduled_send_attempts, settings.scheduled_send_backoff_s,
            settings.scheduled_send_claim_s, settings.parent_digest_hour) == (5, 60.0, 300.0, 7)
