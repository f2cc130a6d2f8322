"""Background jobs' queue and workers (bot.storage.job_queue, bot.pipeline.job_workers) on a real broker.

Each test runs with Dramatiq's in-process StubBroker (no REDIS_URL) and with its RedisBroker on a
real Redis (a key prefix per test); a Redis that does not answer fails the test. `run_job` here is
a stand-in that marks the job running, waits until the test lets it go, and completes it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import dramatiq
import pytest

from bot import lanes
from bot.clock import system_now
from bot.config import load_settings
from bot.pipeline.job_workers import JobWorkers, worker_name
from bot.services import Services, build_services
from bot.storage.job_queue import QUEUE_NAME, job_lock_key
from bot.storage.models import Conversation, GenerationJob, User
from tests.support.harness import REDIS_URL, Database, clear_redis

ROOT = Path(__file__).resolve().parents[2]
LEASE_S = 1.0
_phones = itertools.count(1)


class Runs:
    """A run_job that records its calls; each run waits for `gate` before completing its job."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.cancelled: list[int] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def __call__(self, services: Services, job_id: int) -> None:
        self.calls.append(job_id)
        try:
            await _set(services, job_id, status="running")
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled.append(job_id)
            raise
        await _set(services, job_id, status="completed", finished_at=system_now())


class Processed(dramatiq.Middleware):
    """Counts the messages a broker's workers have finished with (acked or not)."""

    def __init__(self) -> None:
        self.count = 0

    def after_process_message(self, broker: Any, message: Any, *, result: Any = None,
                              exception: Any = None) -> None:
        self.count += 1


class Backend:
    """Services on one database and one broker kind; everything made is closed at the end."""

    def __init__(self, kind: str, database: Database, tmp_path: Path) -> None:
        self.kind = kind
        self.prefix = f"test:{uuid.uuid4().hex[:12]}:"
        self.env = {"DATA_DIR": str(tmp_path / "data"), "DATABASE_URL": database.url,
                    "JOB_LEASE_S": str(LEASE_S), "JOB_SWEEP_INTERVAL_S": "3600", "LOG_LEVEL": "WARNING"}
        if kind == "redis":
            self.env |= {"REDIS_URL": REDIS_URL, "REDIS_KEY_PREFIX": self.prefix}
        self.services: list[Services] = []
        self.workers: list[JobWorkers] = []

    async def make(self, **env: str) -> Services:
        services = await build_services(load_settings({**self.env, **env}))
        self.services.append(services)
        if not await services.state.ping():
            raise RuntimeError(f"Redis does not answer at {REDIS_URL}")
        return services

    async def start(self, services: Services, run_job: Any, concurrency: int = 1) -> JobWorkers:
        workers = JobWorkers(services, run_job, concurrency=concurrency)
        self.workers.append(workers)
        await workers.start()
        return workers

    async def close(self) -> None:
        for workers in self.workers:
            await workers.stop()
        for services in self.services:
            await services.close()
        if self.kind == "redis":
            await clear_redis(self.prefix)


@pytest.fixture(params=["memory", "redis"])
async def backend(request: pytest.FixtureRequest, test_database: Database,
                  tmp_path: Path) -> AsyncIterator[Backend]:
    made = Backend(request.param, test_database, tmp_path)
    try:
        yield made
    finally:
        await made.close()


async def _set(services: Services, job_id: int, **values: Any) -> None:
    async with services.sessions() as db:
        job = await db.get(GenerationJob, job_id)
        assert job is not None
        for name, value in values.items():
            setattr(job, name, value)
        await db.commit()


async def _job(services: Services, job_id: int) -> GenerationJob:
    async with services.sessions() as db:
        job = await db.get(GenerationJob, job_id)
        assert job is not None
        return job


async def make_job(services: Services, status: str = "queued", heartbeat_at: datetime | None = None,
                   age_s: float = 0) -> int:
    now = system_now()
    async with services.sessions() as db:
        user = User(phone=f"+2250799{next(_phones):06d}", mode="child", onboarding_step=None, created_at=now)
        db.add(user)
        await db.flush()
        conv = Conversation(user_id=user.id, active=True, created_at=now)
        db.add(conv)
        await db.flush()
        job = GenerationJob(user_id=user.id, conversation_id=conv.id, channel="whatsapp",
                            request="un long rapport", status=status, heartbeat_at=heartbeat_at,
                            created_at=now - timedelta(seconds=age_s))
        db.add(job)
        await db.commit()
        return job.id


async def until(check: Callable[[], Awaitable[bool] | bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if await got if isinstance(got, Awaitable) else got:
            return
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def drained(services: Services, timeout_s: float = 15.0) -> None:
    """Waits until the broker holds no message of the jobs' queue (delayed ones included)."""
    await asyncio.to_thread(services.jobs.broker.join, QUEUE_NAME, timeout=int(timeout_s * 1000))


async def _status(services: Services, job_id: int, status: str) -> bool:
    return (await _job(services, job_id)).status == status


async def ended(services: Services, job_id: int) -> bool:
    return await _status(services, job_id, "completed")


# --- one delivery ------------------------------------------------------------------------------


async def test_an_enqueued_job_runs_once_with_its_id(backend: Backend) -> None:
    services = await backend.make()
    runs = Runs()
    await backend.start(services, runs)
    job_id = await make_job(services)
    services.jobs.enqueue(job_id)
    await until(lambda: ended(services, job_id))
    await drained(services)
    assert runs.calls == [job_id]
    job = await _job(services, job_id)
    assert job.worker == worker_name() and job.heartbeat_at is not None
    assert await services.state.kv_get(job_lock_key(job_id)) is None  # the lease was given back


async def test_a_job_runs_as_background_work(backend: Backend) -> None:
    """Its CPU work goes to the background lane's threads, never the chat workers' (bot.lanes)."""
    services = await backend.make()
    seen: list[bool] = []

    async def run_job(services: Services, job_id: int) -> None:
        seen.append(lanes.in_background())
        await _set(services, job_id, status="completed", finished_at=system_now())

    await backend.start(services, run_job)
    job_id = await make_job(services)
    services.jobs.enqueue(job_id)
    await until(lambda: ended(services, job_id))
    assert seen == [True] and not lanes.in_background()


async def test_an_ended_job_is_not_run(backend: Backend) -> None:
    services = await backend.make()
    runs = Runs()
    await backend.start(services, runs)
    done_id = await make_job(services, status="completed")
    cancelled_id = await make_job(services, status="cancelled")
    services.jobs.enqueue(done_id)
    services.jobs.enqueue(cancelled_id)
    await drained(services)
    assert runs.calls == []
    assert (await _job(services, done_id)).heartbeat_at is None


async def test_two_deliveries_at_once_run_the_job_once(backend: Backend) -> None:
    """Two deliveries of one job at the same time (one process with two threads, or two processes
    sharing Redis): the second finds the lease taken, and the job runs once."""
    first = await backend.make()
    runs, processed = Runs(), Processed()
    runs.gate.clear()
    first.jobs.broker.add_middleware(processed)
    await backend.start(first, runs, concurrency=2)
    if backend.kind == "redis":
        second = await backend.make()
        second.jobs.broker.add_middleware(processed)
        await backend.start(second, runs, concurrency=1)
    job_id = await make_job(first)
    first.jobs.enqueue(job_id)
    first.jobs.enqueue(job_id)
    # The other delivery is done while the job still runs (the one holding the lease has started it).
    await until(lambda: processed.count >= 1 and bool(runs.calls))
    assert runs.calls == [job_id]
    runs.gate.set()
    await until(lambda: ended(first, job_id))
    await drained(first)
    assert runs.calls == [job_id] and processed.count >= 3  # both, and the one sent again later


# --- recovery ----------------------------------------------------------------------------------


async def test_the_sweeper_queues_again_stale_jobs_whose_lease_is_free(backend: Backend) -> None:
    services = await backend.make(JOB_LEASE_S="5")  # stale: a heartbeat older than 10 s
    stale = system_now() - timedelta(seconds=15)
    dead = await make_job(services, status="running", heartbeat_at=stale)
    held = await make_job(services, status="running", heartbeat_at=stale)
    alive = await make_job(services, status="running", heartbeat_at=system_now())
    lost = await make_job(services, status="queued", age_s=15)  # its message never came
    new = await make_job(services, status="queued")
    over = await make_job(services, status="completed", heartbeat_at=stale)
    token = await services.state.acquire(job_lock_key(held), 60)  # another worker runs it
    assert token is not None
    runs = Runs()
    workers = await backend.start(services, runs)  # sweeps at start
    await until(lambda: ended(services, dead))
    await until(lambda: ended(services, lost))
    assert sorted(runs.calls) == [dead, lost]
    assert await workers.sweep() == []
    # The lease's holder is gone: once its lease is free, the next sweep queues the job.
    await services.state.release(job_lock_key(held), token)
    assert await workers.sweep() == [held]
    await until(lambda: ended(services, held))
    assert sorted(runs.calls) == sorted([dead, lost, held])
    assert {(await _job(services, j)).status for j in (alive, new)} == {"running", "queued"}
    assert (await _job(services, over)).heartbeat_at == stale


async def test_stop_cuts_a_running_job_and_the_next_start_resumes_it(backend: Backend) -> None:
    services = await backend.make()
    runs = Runs()
    runs.gate.clear()
    workers = await backend.start(services, runs)
    job_id = await make_job(services)
    services.jobs.enqueue(job_id)
    await until(lambda: runs.calls == [job_id])
    await until(lambda: _status(services, job_id, "running"))
    await workers.stop()
    assert runs.cancelled == [job_id]
    job = await _job(services, job_id)
    assert job.status == "running"  # left as it is, to be resumed
    # No longer run here: dated back, so that the next start's sweep takes it at once.
    assert job.heartbeat_at is not None and job.heartbeat_at < system_now() - timedelta(seconds=2 * LEASE_S)
    assert await services.state.kv_get(job_lock_key(job_id)) is None
    runs.gate.set()
    await backend.start(services, runs)
    await until(lambda: ended(services, job_id))
    assert runs.calls == [job_id, job_id]


# --- a dead worker process (Redis) --------------------------------------------------------------

_DOOMED = """
import asyncio, os
from bot.config import load_settings
from bot.pipeline.job_workers import JobWorkers
from bot.services import build_services

async def hang(services, job_id):
    print("running", job_id, flush=True)
    await asyncio.Event().wait()

async def main():
    services = await build_services(load_settings())
    await JobWorkers(services, hang).start()
    print("ready", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


async def test_a_killed_worker_s_job_is_run_by_another_after_the_heartbeat_timeout(
        test_database: Database, tmp_path: Path) -> None:
    backend = Backend("redis", test_database, tmp_path)
    backend.env |= {"JOB_BROKER_HEARTBEAT_TIMEOUT_S": "3", "JOB_BROKER_MAINTENANCE_CHANCE": "1000000"}
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TEST_")}, **backend.env,
           "PYTHONPATH": str(ROOT)}
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", _DOOMED, cwd=tmp_path, env=env,
                                                stdout=asyncio.subprocess.PIPE)
    try:
        live = await backend.make()
        assert proc.stdout is not None
        assert await asyncio.wait_for(proc.stdout.readline(), 30) == b"ready\n"
        job_id = await make_job(live)  # made now: the other process's first sweep did not see it
        live.jobs.enqueue(job_id)
        assert await asyncio.wait_for(proc.stdout.readline(), 10) == f"running {job_id}\n".encode()
        runs = Runs()
        await backend.start(live, runs)  # its sweep finds the job's heartbeat fresh, and never sweeps again
        proc.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        assert await proc.wait() == -signal.SIGKILL
        await until(lambda: runs.calls == [job_id], timeout_s=30)
        took = time.monotonic() - killed
        await until(lambda: ended(live, job_id))
        print(f"a killed worker's job was taken up {took:.1f}s later")
        assert LEASE_S <= took < 20, took  # not before its lease ran out
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await backend.close()
