"""The runner of periodic jobs (reminders, weekly summaries, parents' digests, the library's index).

What a job is (`Job`, `period_key`) lives in bot.periodic, so that a domain can define one
without importing the pipeline; the sends a job makes are bot.channel.scheduled.

Jobs: every worker process runs them, and each runs once per period (its `interval_s`) across all
processes: ticks fall on the period's boundaries of the wall clock, the same in every process, and
only the process that first takes the period's key in State (`job:<name>:<period>`) runs it. The
sends a job makes are claimed row by row (bot.channel.scheduled), so even two runs at once (one longer
than its period, or hosts whose clocks differ by more than a period) never send twice.
A failing tick — Redis or the database away, a bug, one bad row — is logged and counted, and the
next tick runs as usual: only `stopping` ends a job's loop.

Chat first: a tick runs in the background lane (bot.lanes): at most BACKGROUND_CONCURRENCY ticks
at once in a process, their CPU work on the lane's own threads, never the workers' slots.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from bot import metrics
from bot.lanes import Lane, as_background, background_slot, configure
from bot.periodic import Job, period_key

if TYPE_CHECKING:
    from bot.services import Services

log = logging.getLogger("bot.pipeline.scheduler")


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



async def run_once(services: Services, job: Job) -> bool:
    """Runs one tick of `job` now, as background work; False when it failed (logged)."""
    try:
        with as_background():
            await job.fn(services, services.clock())
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("job failed", extra={"job": job.name})
        metrics.JOB_RUNS.labels(job.name, "failed").inc()
        return False
    metrics.JOB_RUNS.labels(job.name, "ok").inc()
    return True



async def _tick(services: Services, job: Job, period: int, lane: Lane | None = None) -> None:
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
        async with background_slot(lane):  # the claim is this process's: it runs once a slot is free
            await run_once(services, job)


async def _loop(services: Services, job: Job, stopping: asyncio.Event, lane: Lane) -> None:
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
            await _tick(services, job, period, lane)
        except asyncio.CancelledError:
            raise
        except Exception:  # whatever a tick raises, the next one runs
            log.exception("job tick failed", extra={"job": job.name})


async def run_jobs(services: Services, jobs: Sequence[Job], stopping: asyncio.Event) -> None:
    configure(services.settings.lanes.background_threads)
    lane = Lane(services.settings.lanes.background_concurrency)
    await asyncio.gather(*(_loop(services, job, stopping, lane) for job in jobs))


# --- scheduled sends ---------------------------------------------------------------------------
