"""Periodic jobs (reminders, weekly summaries, parents' digests) and the proactive sends they make.

Jobs: every worker process runs them, and each runs once per period (its `interval_s`) across all
processes: ticks fall on the period's boundaries of the wall clock, the same in every process, and
only the process that first takes the period's key in State (`job:<name>:<period>`) runs it. The
sends a job makes are claimed row by row besides (below), so even two runs at once (one longer
than its period, or hosts whose clocks differ by more than a period) never send twice.
A failing tick — Redis or the database away, a bug, one bad row — is logged and counted, and the
next tick runs as usual: only `stopping` ends a job's loop.

Sends: a job first plans what it means to send as ScheduledSend rows with a unique `key` (task and
reminder, link and week, parent and day), so a message is planned once whichever worker runs the
job. `deliver_due` then claims each due row with an atomic UPDATE … WHERE and sends it:
- accepted by Twilio: "sent", never claimed again;
- not sent for a reason that will not pass (opted out, delivery blocked, no address, channel not
  configured): "skipped"; refused by Twilio for good (an invalid number…): "failed";
- an error raised after the message was handed to Twilio (recording it failed): "unknown", not
  retried. An ambiguous Twilio failure is retried like any other: bot.channel.twilio_client has already
  looked the message up in Twilio's list and not found it;
- anything else (Twilio unreachable or rate limited, the WhatsApp window closed, the row failing to
  render, the database away): the claim is released with `next_attempt_at` = now +
  SCHEDULED_SEND_BACKOFF_S × 2^(attempts − 1), and after SCHEDULED_SEND_ATTEMPTS attempts the row
  is recorded as "failed".
A claim still held after SCHEDULED_SEND_CLAIM_S means the worker died mid-send: it counts as an
attempt and is retried. Only there can a message go twice (if Twilio had accepted it in the
instant before the worker died); everywhere else a message goes at least once and never twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from bot import metrics
from bot.storage.db import rowcount
from bot.storage.models import OutboundMessage, ScheduledSend, User

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from bot.services import Services

log = logging.getLogger("bot.pipeline.scheduler")

# SendResult.skipped reasons that may change by the next attempt (the user writes again and opens the
# WhatsApp window). Any other reason (opted out, delivery blocked, not configured…) is final.
RETRIED_SKIPS = frozenset({"window_closed"})
_BATCH = 200
_RECORD_TRIES = 3


async def sweep_each_interval(state: Any, key: str, interval_s: float, sweep: Callable[[], Awaitable[Any]],
                              logger: logging.Logger, what: str,
                              stopped: Callable[[], bool] = lambda: False) -> None:
    """Runs `sweep` every `interval_s`, once per interval across all processes: the process that
    sets `key` in the shared state for the interval sweeps. A failed sweep is logged (`what failed`)
    and the next interval tries again."""
    while not stopped():
        await asyncio.sleep(interval_s)
        try:
            if await state.set_if_absent(key, "1", interval_s * 0.9):
                await sweep()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("%s failed", what)


@dataclass(frozen=True)
class Job:
    name: str
    interval_s: float
    fn: Callable[[Services, datetime], Awaitable[None]]


async def run_once(services: Services, job: Job) -> bool:
    """Runs one tick of `job` now; False when it failed (logged)."""
    try:
        await job.fn(services, services.clock())
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("job failed", extra={"job": job.name})
        metrics.JOB_RUNS.labels(job.name, "failed").inc()
        return False
    metrics.JOB_RUNS.labels(job.name, "ok").inc()
    return True


def period_key(job: Job, period: int) -> str:
    """The key in State that the process running `job` for `period` holds."""
    return f"job:{job.name}:{period}"


async def _tick(services: Services, job: Job, period: int) -> None:
    try:
        # The claim itself needs Redis: when Redis is away the tick is skipped, not the loop ended.
        # It outlives its period: a process whose clock is a little behind finds it still there.
        mine = await services.state.set_if_absent(period_key(job, period), "1", max(job.interval_s * 2, 1.0))
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("job not started: its claim failed", extra={"job": job.name})
        metrics.JOB_RUNS.labels(job.name, "failed").inc()
        return
    if mine:
        await run_once(services, job)


async def _loop(services: Services, job: Job, stopping: asyncio.Event) -> None:
    while not stopping.is_set():
        # The next period's start: every process asks for the same period at about the same time. A
        # tick that ran past it skips the periods it overlapped (other processes ran them).
        now = time.time()
        period = int(now // job.interval_s) + 1
        try:
            await asyncio.wait_for(stopping.wait(), period * job.interval_s - now)
            return
        except TimeoutError:
            pass
        try:
            await _tick(services, job, period)
        except asyncio.CancelledError:
            raise
        except Exception:  # whatever a tick raises, the next one runs
            log.exception("job tick failed", extra={"job": job.name})


async def run_jobs(services: Services, jobs: Sequence[Job], stopping: asyncio.Event) -> None:
    await asyncio.gather(*(_loop(services, job, stopping) for job in jobs))


# --- scheduled sends ---------------------------------------------------------------------------


@dataclass
class Outgoing:
    """What a planned row renders to: the recipient, the text, the channel (None: their last one)."""

    user: User
    text: str
    channel: str | None = None
    kind: str = "reminder"


# Renders one planned row (in a read-only session) at `now`; None when there is nothing to send anymore.
Render = Callable[["Services", "AsyncSession", ScheduledSend, datetime], Awaitable[Outgoing | None]]


async def plan(db: AsyncSession, now: datetime, *, key: str, kind: str, user_id: int,
               slot_at: datetime, task_id: int | None = None, link_id: int | None = None) -> bool:
    """Adds a row to send (in the caller's transaction); False when `key` was planned already."""
    try:
        async with db.begin_nested():
            db.add(ScheduledSend(key=key, kind=kind, user_id=user_id, task_id=task_id, link_id=link_id,
                                 slot_at=slot_at, status="pending", attempts=0, next_attempt_at=now,
                                 created_at=now))
        return True
    except IntegrityError:
        return False


def _claimable(now: datetime, max_attempts: int) -> Any:
    return and_(
        ScheduledSend.attempts < max_attempts,
        or_(
            and_(ScheduledSend.status == "pending", ScheduledSend.next_attempt_at <= now),
            and_(ScheduledSend.status == "sending", ScheduledSend.claimed_until < now),
        ),
    )


async def _due_ids(services: Services, now: datetime, kinds: Sequence[str]) -> list[int]:
    max_attempts = services.settings.scheduled_send_attempts
    # A claim that expired with no attempt left: the worker died on its last try.
    dead = and_(ScheduledSend.kind.in_(kinds), ScheduledSend.status == "sending",
                ScheduledSend.claimed_until < now, ScheduledSend.attempts >= max_attempts)
    async with services.sessions() as db:
        if await db.scalar(select(ScheduledSend.id).where(dead).limit(1)) is not None:
            # Looked for first: most ticks have none, and SQLite has one writer at a time.
            await db.execute(update(ScheduledSend).where(dead).values(
                status="failed", claimed_until=None, updated_at=now,
                last_error="claim expired on the last attempt"))
            await db.commit()
        ids = await db.scalars(
            select(ScheduledSend.id)
            .where(ScheduledSend.kind.in_(kinds), _claimable(now, max_attempts))
            .order_by(ScheduledSend.next_attempt_at, ScheduledSend.id)
            .limit(_BATCH)
        )
        return list(ids)


async def _claim(services: Services, send_id: int, now: datetime) -> bool:
    settings = services.settings
    async with services.sessions() as db:
        result = await db.execute(
            update(ScheduledSend)
            .where(ScheduledSend.id == send_id, _claimable(now, settings.scheduled_send_attempts))
            .values(status="sending", attempts=ScheduledSend.attempts + 1, updated_at=now,
                    claimed_until=now + timedelta(seconds=settings.scheduled_send_claim_s))
        )
        await db.commit()
        return rowcount(result) == 1


async def _record(services: Services, send_id: int, now: datetime, status: str, error: str | None) -> str:
    """The outcome of a claimed attempt. Retried a little: a hiccup here must not leave a sent row
    claimed (it would be sent again once the claim expires)."""
    settings = services.settings
    for attempt in range(_RECORD_TRIES):
        try:
            async with services.sessions() as db:
                row = await db.get(ScheduledSend, send_id)
                if row is None:
                    return status
                final = status
                if status == "retry":
                    final = "failed" if row.attempts >= settings.scheduled_send_attempts else "pending"
                    delay = settings.scheduled_send_backoff_s * 2 ** max(0, row.attempts - 1)
                    row.next_attempt_at = now + timedelta(seconds=delay)
                row.status, row.claimed_until, row.updated_at = final, None, now
                row.last_error = error[:300] if error else None
                await db.commit()
                if final == "failed":
                    log.error("scheduled send failed for good", extra={"send_id": send_id, "error": error})
                return final
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("could not record a scheduled send's outcome", extra={"send_id": send_id})
            await asyncio.sleep(0.05 * 2**attempt)
    return status


async def _last_outbound_id(services: Services) -> int:
    async with services.sessions() as db:
        return int(await db.scalar(select(func.max(OutboundMessage.id))) or 0)


async def _maybe_sent(services: Services, outgoing: Outgoing, after_id: int) -> bool:
    """Whether this attempt left a record of a message Twilio took or may be taking (accepted, or
    handed over with no outcome recorded): then it is not sent again."""
    try:
        async with services.sessions() as db:
            found = await db.scalar(
                select(OutboundMessage.id).where(
                    OutboundMessage.id > after_id, OutboundMessage.user_id == outgoing.user.id,
                    OutboundMessage.kind == outgoing.kind,
                    OutboundMessage.status.not_in(("failed", "unknown")),
                ).limit(1)
            )
    except Exception:
        log.exception("could not look for the send's record")
        return True  # unknown: not sending again is the safe side
    return found is not None


async def _render(services: Services, send_id: int, now: datetime,
                  render: Mapping[str, Render]) -> Outgoing | str | None:
    """The row's message, None when there is nothing to send anymore, or the rendering error."""
    try:
        async with services.sessions() as db:
            row = await db.get(ScheduledSend, send_id)
            return None if row is None else await render[row.kind](services, db, row, now)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("scheduled send not rendered", extra={"send_id": send_id})
        return f"{type(exc).__name__}: {exc}"


async def _attempt(services: Services, send_id: int, now: datetime, render: Mapping[str, Render]) -> str:
    from bot.channel.outbound import send_to_user  # late: bot.channel.outbound is the message path's module

    outgoing = await _render(services, send_id, now, render)
    if isinstance(outgoing, str):
        return await _record(services, send_id, now, "retry", outgoing)
    if outgoing is None:
        return await _record(services, send_id, now, "skipped", "nothing to send anymore")
    try:
        after_id = await _last_outbound_id(services)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("scheduled send not started", extra={"send_id": send_id})
        return await _record(services, send_id, now, "retry", f"{type(exc).__name__}: {exc}")
    try:
        result = await send_to_user(services, outgoing.user, text=outgoing.text, channel=outgoing.channel,
                                    kind=outgoing.kind)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("scheduled send raised", extra={"send_id": send_id})
        # Twilio may have taken it before the error (recording the send failed): never send it twice.
        status = "unknown" if await _maybe_sent(services, outgoing, after_id) else "retry"
        return await _record(services, send_id, now, status, f"{type(exc).__name__}: {exc}")
    if result.sids:
        # Accepted (a part that failed after another was accepted is not sent again: never twice).
        return await _record(services, send_id, now, "sent", result.error)
    if result.skipped:
        status = "retry" if result.skipped in RETRIED_SKIPS else "skipped"
        return await _record(services, send_id, now, status, result.skipped)
    log.warning("scheduled send not accepted", extra={"send_id": send_id, "error": result.error})
    status = "retry" if getattr(result, "retryable", True) else "failed"
    return await _record(services, send_id, now, status, result.error)


async def deliver_due(services: Services, now: datetime, render: Mapping[str, Render]) -> int:
    """Sends the planned rows of these kinds that are due; returns how many Twilio accepted."""
    sent = 0
    for send_id in await _due_ids(services, now, list(render)):
        if await _claim(services, send_id, now):
            sent += await _attempt(services, send_id, now, render) == "sent"
    return sent
