"""Background jobs across real processes (`python -m bot serve|worker`): a long turn promoted by
one worker, the worker running its job killed with SIGKILL, the job finished by another worker from
its last saved step with nothing sent or charged twice; and the same job in single-process mode
(`serve` alone, no Redis), killed and restarted."""

from __future__ import annotations

import os
import signal
from typing import Any

import aiohttp
import pytest

from tests.support.job_processes import ANSWER, PHONE, STEPS, assert_sent_once, steps_done, until


@pytest.mark.postgres_only  # several worker processes around one PostgreSQL and one Redis
async def test_a_worker_killed_mid_job_another_finishes_it(long_work: Any) -> None:
    h, deploy = long_work
    await h.make_user(PHONE, mode="pro", credit_balance=100)
    d = deploy()
    await d.start(workers=2)
    async with aiohttp.ClientSession() as session:
        assert await d.inbound(session, PHONE, "Recherche les normes SYSCOHADA et fais le bilan") == 200
    running = await until(h, lambda j: j.status == "running" and steps_done(j) >= 3 and j.worker)
    assert running.worker is not None
    pid = int(running.worker.rsplit(":", 1)[1])
    victim = next(p for p in d.workers if p.pid == pid)
    os.kill(pid, signal.SIGKILL)  # no cleanup: its lease and its Dramatiq message are left behind
    victim.wait()
    done = await until(h, lambda j: j.status == "completed", timeout_s=90)
    assert done.attempts == 2 and done.worker != running.worker
    assert steps_done(done) == STEPS and done.result_text == ANSWER
    await assert_sent_once(h, done)


@pytest.mark.sqlite_only  # the single-process deployment: SQLite, no Redis
async def test_single_process_serve_killed_mid_job_resumes_at_restart(long_work: Any) -> None:
    h, deploy = long_work
    await h.make_user(PHONE, mode="pro", credit_balance=100)
    d = deploy(redis=False)
    await d.start(workers=0)  # `serve` alone: message workers and job workers in one process
    async with aiohttp.ClientSession() as session:
        assert await d.inbound(session, PHONE, "Recherche les normes SYSCOHADA et fais le bilan") == 200
    await until(h, lambda j: j.status == "running" and steps_done(j) >= 3)
    assert d.server is not None
    d.server.send_signal(signal.SIGKILL)
    d.server.wait()
    await d.start(workers=0)
    done = await until(h, lambda j: j.status == "completed", timeout_s=90)
    assert done.attempts == 2 and steps_done(done) == STEPS
    await assert_sent_once(h, done)
