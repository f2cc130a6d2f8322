"""Background jobs run here: Dramatiq worker threads hand each delivery to this event loop.

A job is a `generation_jobs` row; its message (bot.storage.job_queue) only says "run it now". A
delivery takes the job's lease `lock:job:{id}` in the shared state, renews it every third of
JOB_LEASE_S while the job runs and writes the row's `heartbeat_at` and `worker` each time, and gives
it back at the end. A delivery that finds the lease taken sends itself again JOB_LEASE_S later (the
holder may die: its lease then runs out); one for a job that has ended, or is gone, does nothing.
So a message delivered twice, or redelivered by Dramatiq after its worker died, runs the job once.

The sweeper (at start, then every JOB_SWEEP_INTERVAL_S across all processes) queues again the
active jobs whose heartbeat is older than two leases (or never written, on a job created that long
ago) and whose lease is free: the in-process broker's messages are lost at a restart, and Redis
may lose one. What a job does is `run_job(services, job_id)`, passed by the composition root
(bot/cli.py); it saves the job's state after every step, so a job cut anywhere is resumed.

A job is background work (bot.lanes): JOB_CONCURRENCY of them at once, their CPU work on the
background lane's threads, never the chat workers' slots or the loop's default executor.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import socket
from collections.abc import Callable, Coroutine
from datetime import datetime, timedelta
from typing import Any

from dramatiq import Worker
from dramatiq.middleware import TimeLimitExceeded
from dramatiq.worker import ConsumerThread, WorkerThread
from sqlalchemy import or_, select, update

from bot.clock import system_now
from bot.lanes import as_background, configure
from bot.pipeline.scheduler import sweep_each_interval
from bot.services import Services
from bot.storage.job_queue import JobQueue, job_lock_key
from bot.storage.models import GenerationJob

log = logging.getLogger("bot.pipeline.job_workers")

RunJob = Callable[[Services, int], Coroutine[Any, Any, None]]

# The statuses of bot.jobs: a job runs while it is active, never once it has ended.
ACTIVE = ("queued", "running")
ENDED = ("completed", "failed", "cancelled")


def worker_name() -> str:
    """This process as `generation_jobs.worker` names it."""
    return f"{socket.gethostname()}:{os.getpid()}"[:64]


class JobWorkers:
    """Dramatiq worker threads whose deliveries run `run_job` on the loop that called `start`."""

    def __init__(self, services: Services, run_job: RunJob, *, concurrency: int | None = None) -> None:
        self.services = services
        self.queue: JobQueue = services.jobs
        self.run_job = run_job
        self.concurrency = concurrency or services.settings.job_concurrency
        self.name = worker_name()
        self.running: set[int] = set()  # jobs whose lease this process holds
        self._loop: asyncio.AbstractEventLoop | None = None
        self._worker: Worker | None = None
        self._deliveries: set[asyncio.Task[None]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._stopping = False

    # --- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        configure(self.services.settings.lanes.background_threads)
        self._stopping = False
        self.queue.draining = False
        self.queue.set_runner(self._deliver_from_thread)
        worker = Worker(self.queue.broker, worker_threads=self.concurrency,
                        worker_timeout=int(self.services.settings.job_poll_s * 1000))
        # A process takes no more jobs than it runs at once: a job waiting in a busy process's
        # memory would wait there for a long job to end while another process sits idle.
        worker.queue_prefetch = self.concurrency
        worker.start()
        self._worker = worker
        # Jobs left from before a restart are queued now, not at the first sweep.
        await self._sweep_logged()
        self._sweeper = asyncio.create_task(self._sweep_forever(), name="job-sweeper")

    async def stop(self, grace_s: float = 0.0) -> None:
        """Stops taking jobs. A job running here stops after its current step and hands itself back
        (`draining`, read by the job's runner); the deliveries still running after `grace_s` are
        cancelled where they are (their state is saved after every step). Either way the leases
        are given back and the jobs sent again: another worker, or the next start, resumes them."""
        self._stopping = True
        self.queue.draining = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
            self._sweeper = None
        if self._worker is not None:
            # No delivery begins any more; the consumers keep the broker's heartbeat meanwhile, and
            # what they fetched is given back when the worker stops.
            for thread in self._worker.workers:
                thread.stop()
        await self._drain(grace_s)
        deliveries = list(self._deliveries)
        for task in deliveries:
            task.cancel()
        await asyncio.gather(*deliveries, return_exceptions=True)
        worker, self._worker = self._worker, None
        if worker is not None:
            # Every thread told at once (deliveries are over or handed back): each wakes within
            # Dramatiq's idle timeout (1 s), so stopping waits that once, not for workers then consumers.
            threads: list[WorkerThread | ConsumerThread] = [*worker.workers, *worker.consumers.values()]
            for each in threads:
                each.stop()
            # On a thread: a delivery still arriving needs this loop to hand itself back.
            await asyncio.to_thread(worker.stop, 10_000)
            # Worker.start added its middleware to the broker; a later start adds its own.
            broker = self.queue.broker
            broker.middleware = [m for m in broker.middleware if getattr(m, "worker", None) is not worker]
        self.queue.set_runner(None)

    async def _drain(self, grace_s: float) -> None:
        """Waits, at most `grace_s`, for the deliveries running here to end."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_s
        while self._deliveries and (left := deadline - loop.time()) > 0:
            await asyncio.wait(list(self._deliveries), timeout=left)

    # --- one delivery ------------------------------------------------------------------------
    def _deliver_from_thread(self, job_id: int) -> None:
        """The actor's body, on a Dramatiq worker thread: runs the delivery on the event loop and
        waits for it, at most the actor's time limit (Dramatiq's TimeLimit middleware is not booted
        outside its own command line, and could not interrupt a thread waiting on a future)."""
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(self._deliver(job_id), self._loop)
        try:
            done, _ = concurrent.futures.wait([future], timeout=self.queue.time_limit_s)
            if not done:
                raise TimeLimitExceeded(f"job {job_id} ran longer than {self.queue.time_limit_s:.0f}s")
            future.result()
        except BaseException:
            future.cancel()  # the delivery gives its lease back as it ends
            raise

    async def _deliver(self, job_id: int) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._deliveries.add(task)
        try:
            if not self._stopping:
                await self._take(job_id)
                return
        except asyncio.CancelledError:
            if not self._stopping:
                raise
        finally:
            self._deliveries.discard(task)
        await self._hand_back(job_id)  # stopping: the message is acked, so send it again

    async def _take(self, job_id: int) -> None:
        if not await self._runnable(job_id):
            return  # ended or gone: the message is acked and nothing runs
        state, lease = self.services.state, self.services.settings.job_lease_s
        token = await state.acquire(job_lock_key(job_id), lease)
        if token is None:
            # Another worker runs it. Look again in one lease: if that worker died, its lease has
            # run out by then; if it finished, the job has ended.
            await self.queue.aenqueue(job_id, delay_s=lease)
            return
        self.running.add(job_id)
        try:
            if await self._runnable(job_id):  # it may have ended just before the lease was free
                await self._run_held(job_id, token)
        finally:
            self.running.discard(job_id)
            await self._let_go(job_id, token)

    async def _run_held(self, job_id: int, token: str) -> None:
        """Runs the job while its lease is renewed; run_job's error is raised (Dramatiq retries)."""
        await self._beat(job_id, system_now())
        with as_background():  # the task takes the mark with the context it copies
            run = asyncio.create_task(self.run_job(self.services, job_id), name=f"job-{job_id}")
        done = asyncio.Event()
        keeper = asyncio.create_task(self._keep(job_id, token, run, done), name=f"job-{job_id}-lease")
        try:
            try:
                await asyncio.wait([run])
            except asyncio.CancelledError:
                run.cancel()
                await asyncio.wait([run])  # its last writes end before the lease is given back
                raise
        finally:
            # Told to stop rather than cancelled: a Redis or database call cut half-way can leave
            # its connection unfit to go back to the pool.
            done.set()
            await asyncio.wait([keeper])
        if run.cancelled():
            return  # another worker took the lease (see _keep) and runs it
        if run.exception() is not None:
            log.warning("background job failed", extra={"job_id": job_id})
        run.result()

    async def _keep(self, job_id: int, token: str, run: asyncio.Task[None], done: asyncio.Event) -> None:
        """Renews the lease every third of it and writes the heartbeat; stops the run when another
        worker holds the lease (this one ran out, e.g. while the loop was stalled)."""
        state, lease, key = self.services.state, self.services.settings.job_lease_s, job_lock_key(job_id)
        beat: asyncio.Task[None] | None = None
        try:
            while True:
                try:
                    await asyncio.wait_for(done.wait(), lease / 3)
                    return
                except TimeoutError:
                    pass
                try:
                    # Lost but free (Redis restarted, or it ran out): taken again with the same token.
                    held = (await state.renew(key, token, lease)
                            or await state.set_if_absent(key, token, lease))
                except Exception:
                    log.warning("could not renew a job's lease", extra={"job_id": job_id})
                    held = True  # unknown: the heartbeat still tells the sweeper it runs
                if not held:
                    log.warning("job lease taken by another worker; stopping here", extra={"job_id": job_id})
                    run.cancel()
                    return
                # On the side: a slow database write must never delay the next renewal.
                if beat is None or beat.done():
                    beat = asyncio.create_task(self._beat(job_id, system_now()))
        finally:
            if beat is not None:
                await asyncio.wait([beat])  # before _let_go may date the heartbeat back

    async def _let_go(self, job_id: int, token: str) -> None:
        if self._stopping:
            # Cut by stop: dated back so that the next start's sweep resumes it at once.
            stale = system_now() - timedelta(seconds=2 * self.services.settings.job_lease_s + 1)
            await self._beat(job_id, stale)
        try:
            await self.services.state.release(job_lock_key(job_id), token)
        except Exception:
            log.warning("could not release a job's lease", extra={"job_id": job_id})  # it runs out

    async def _hand_back(self, job_id: int) -> None:
        try:
            await self.queue.aenqueue(job_id)
        except Exception:
            log.warning("could not queue a job again; the sweeper will", extra={"job_id": job_id})

    async def _runnable(self, job_id: int) -> bool:
        async with self.services.sessions() as db:
            status = await db.scalar(select(GenerationJob.status).where(GenerationJob.id == job_id))
        return status in ACTIVE

    async def _beat(self, job_id: int, at: datetime) -> None:
        """Writes the job's heartbeat and this worker's name on an active job."""
        try:
            async with self.services.sessions() as db:
                await db.execute(
                    update(GenerationJob)
                    .where(GenerationJob.id == job_id, GenerationJob.status.in_(ACTIVE))
                    .values(heartbeat_at=at, worker=self.name)
                )
                await db.commit()
        except Exception:
            log.warning("could not write a job's heartbeat", extra={"job_id": job_id})

    # --- recovery ----------------------------------------------------------------------------
    async def _sweep_forever(self) -> None:
        await sweep_each_interval(self.services.state, "sweeper:jobs",
                                  self.services.settings.job_sweep_interval_s, self.sweep, log, "job sweep")

    async def _sweep_logged(self) -> None:
        try:
            await self.sweep()
        except Exception:
            log.exception("job sweep failed")  # the next one, an interval later, tries again

    async def sweep(self) -> list[int]:
        """Queues again the active jobs no live worker holds; returns their ids."""
        stale = system_now() - timedelta(seconds=2 * self.services.settings.job_lease_s)
        async with self.services.sessions() as db:
            found = await db.scalars(
                select(GenerationJob.id)
                .where(GenerationJob.status.in_(ACTIVE),
                       or_(GenerationJob.heartbeat_at < stale,
                           GenerationJob.heartbeat_at.is_(None) & (GenerationJob.created_at < stale)))
                .order_by(GenerationJob.id)
            )
            candidates = [job_id for job_id in found if job_id not in self.running]
        queued = []
        for job_id in candidates:
            if await self.services.state.kv_get(job_lock_key(job_id)) is None:
                await self.queue.aenqueue(job_id)
                queued.append(job_id)
        if queued:
            log.info("background jobs queued again", extra={"jobs": queued})
        return queued
