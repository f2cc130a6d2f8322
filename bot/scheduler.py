"""Periodic jobs (reminders, weekly summaries…), run by every worker process.

Each tick of a job runs in one process only (a short claim in State), and jobs themselves must be
idempotent: they claim their rows with an atomic `UPDATE … WHERE` so that two processes never
send the same reminder twice even if both run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from bot import metrics

if TYPE_CHECKING:
    from bot.services import Services

log = logging.getLogger("bot.scheduler")


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


async def _loop(services: Services, job: Job, stopping: asyncio.Event) -> None:
    while not stopping.is_set():
        try:
            await asyncio.wait_for(stopping.wait(), job.interval_s)
            return
        except TimeoutError:
            pass
        if await services.state.set_if_absent(f"job:{job.name}", "1", max(job.interval_s * 0.8, 0.05)):
            await run_once(services, job)


async def run_jobs(services: Services, jobs: Sequence[Job], stopping: asyncio.Event) -> None:
    await asyncio.gather(*(_loop(services, job, stopping) for job in jobs))
