"""The background jobs' queue: a Dramatiq broker and its one actor, `generation_job(job_id)`.

With REDIS_URL the broker is Dramatiq's RedisBroker (its keys under REDIS_KEY_PREFIX), shared by
every process; without it a StubBroker inside this process. The `generation_jobs` row is the truth
and a message only says "run this job now": a lost message delays a job (the sweeper of
bot.pipeline.job_workers queues it again) but never loses it, and a message delivered twice runs the job
once (its lease, `job_lock_key`).

The actor is declared on this queue's own broker, not on Dramatiq's global one, so that several
queues (tests build many services) live side by side in one process. What the actor runs is set
by the pipeline with `set_runner`: storage does not know how a job is run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker

from bot.config import Settings

ACTOR_NAME = "generation_job"
QUEUE_NAME = "generation_jobs"
# A delivery fails when the database or Redis does not answer (a job's own errors end the job):
# a few retries, 10 s then 20 s then 40 s later; the sweeper queues the job again after that.
MAX_RETRIES = 3
MIN_BACKOFF_MS = 10_000
MAX_BACKOFF_MS = 300_000

Runner = Callable[[int], None]  # called on a Dramatiq worker thread with the job's id


def job_lock_key(job_id: int) -> str:
    """The lease of a job: held by the worker running it (bot.pipeline.job_workers)."""
    return f"lock:job:{job_id}"


def time_limit_s(settings: Settings) -> float:
    """How long one delivery may run: the job's whole budget and time to say how it ended."""
    background = settings.limits.background_timeout_s
    return background + max(60.0, background * 0.1)


def _broker(settings: Settings) -> dramatiq.Broker:
    if not settings.redis_url:
        return StubBroker()
    # Dramatiq's commands are short (no blocking pops): a Redis that does not answer fails them
    # within seconds instead of holding a thread, or the event loop for an enqueue, indefinitely.
    client = redis.Redis.from_url(settings.redis_url, socket_connect_timeout=5, socket_timeout=10,
                                  health_check_interval=30)
    # RedisBroker.__init__ carries no annotations in dramatiq (the package is otherwise typed).
    return RedisBroker(  # type: ignore[no-untyped-call]
        client=client,
        namespace=settings.redis_key_prefix + "dramatiq",
        heartbeat_timeout=int(settings.job_broker_heartbeat_timeout_s * 1000),
        maintenance_chance=settings.job_broker_maintenance_chance,
    )


class JobQueue:
    """The broker and the actor's send. One runner per queue: one JobWorkers per process."""

    def __init__(self, settings: Settings) -> None:
        self.broker = _broker(settings)
        self.time_limit_s = time_limit_s(settings)
        self._runner: Runner | None = None
        # Set while this process shuts down: a running job hands itself back after its current step.
        self.draining = False
        # The decorator form: Dramatiq's typing accepts options only without the function.
        self.actor = dramatiq.actor(
            broker=self.broker, actor_name=ACTOR_NAME, queue_name=QUEUE_NAME,
            max_retries=MAX_RETRIES, min_backoff=MIN_BACKOFF_MS, max_backoff=MAX_BACKOFF_MS,
            # Dramatiq's TimeLimit middleware only runs under its own command line (`process_boot`);
            # bot.pipeline.job_workers enforces this limit itself (see JobWorkers).
            time_limit=int(self.time_limit_s * 1000),
        )(self._run)

    def set_runner(self, runner: Runner | None) -> None:
        self._runner = runner

    def _run(self, job_id: int) -> None:
        runner = self._runner
        if runner is None:
            raise RuntimeError("no job runner in this process (JobWorkers not started)")
        runner(job_id)

    def enqueue(self, job_id: int, *, delay_s: float = 0) -> None:
        """Asks for the job to run (after `delay_s`). A Redis round trip: from async code, `aenqueue`."""
        delay = int(delay_s * 1000) if delay_s > 0 else None
        self.actor.send_with_options(args=(job_id,), delay=delay)

    async def aenqueue(self, job_id: int, *, delay_s: float = 0) -> None:
        """`enqueue` on a thread, so that a slow Redis does not stall the event loop."""
        await asyncio.to_thread(self.enqueue, job_id, delay_s=delay_s)

    def close(self) -> None:
        self.broker.close()
        if isinstance(self.broker, RedisBroker):
            self.broker.client.close()
