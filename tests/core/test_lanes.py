"""Chat first (bot.lanes): background work has its own slots and threads, and a child's message is
answered while a batch of it runs. Orders of completion only, never durations."""

from __future__ import annotations

import asyncio
import os
import threading
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from bot import e5, lanes
from bot.config import ConfigError, load_settings
from bot.library import embeddings
from bot.periodic import Job
from bot.pipeline.scheduler import run_once
from tests.support.harness import Harness

PHONE = "+2250700000001"
GUARD_S = 60.0  # a blocked thread gives up after this: the test fails instead of hanging


async def until(check: Any, what: str, timeout_s: float = 30.0) -> None:
    """Waits for `check()` (a guard against hanging, not a timing assertion)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"still waiting for: {what}")
        await asyncio.sleep(0.02)


async def test_a_child_is_answered_while_a_background_batch_holds_its_threads(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    release = threading.Event()
    done: list[int] = []

    def held(n: int) -> int:
        release.wait(GUARD_S)
        done.append(n)
        return n

    async def task(n: int) -> int:
        return await lanes.cpu(held, n)

    # More blocked calls than the loop's default executor has threads: on those threads the
    # child's safety check and language detection would wait behind the batch.
    with lanes.as_background():
        batch = [asyncio.create_task(task(n)) for n in range(40)]
    try:
        status, _ = await h.inbound(PHONE, "Bonjour, c'est quoi une fraction ?")
        assert status == 200

        async def answered() -> bool:
            return bool(await h.texts_to(PHONE))

        await until(answered, "the child's answer while the batch runs")
        assert done == []  # the answer came first: the whole batch still waits
    finally:
        release.set()
        finished = await asyncio.gather(*batch)
    assert sorted(finished) == list(range(40)) and sorted(done) == list(range(40))


async def test_periodic_passes_run_marked_background_and_take_the_lane_slots_in_turn() -> None:
    lane = lanes.Lane(1)
    first_holds = asyncio.Event()
    order: list[str] = []
    marks: list[bool] = []

    async def pass_(name: str, hold: bool) -> None:
        async with lanes.background_slot(lane):
            marks.append(lanes.in_background())
            order.append(f"{name} started")
            if hold:
                await first_holds.wait()
            order.append(f"{name} ended")

    first = asyncio.create_task(pass_("wave", True))
    await asyncio.sleep(0)
    second = asyncio.create_task(pass_("index", False))
    for _ in range(5):
        await asyncio.sleep(0)
    assert order == ["wave started"]  # one slot: the index pass waits for the wave
    first_holds.set()
    await asyncio.gather(first, second)
    assert order == ["wave started", "wave ended", "index started", "index ended"]
    assert marks == [True, True] and not lanes.in_background()

    seen: list[bool] = []

    async def tick(services: Any, now: Any) -> None:
        seen.append(lanes.in_background())

    services: Any = SimpleNamespace(clock=lambda: None)  # a tick's only need here
    assert await run_once(services, Job("probe", 60, tick))
    assert seen == [True] and not lanes.in_background()


async def test_background_work_runs_on_the_lane_threads_or_process_and_chat_on_the_default_ones() -> None:
    names: list[str] = []

    def where() -> None:
        names.append(threading.current_thread().name)

    await lanes.cpu(where)
    assert await lanes.cpu(os.getpid, process=True) == os.getpid()  # chat: a thread of its own
    with lanes.as_background():
        await lanes.cpu(where)
        child = await lanes.cpu(os.getpid, process=True)
        assert await lanes.cpu(os.getpriority, os.PRIO_PROCESS, 0, process=True) >= lanes.NICE
    assert not names[0].startswith("background") and names[1].startswith("background")
    assert child != os.getpid()


async def test_the_index_pass_embeds_in_the_lane_process_as_a_search_would_here() -> None:
    local = embeddings.LocalEmbedder(load_settings({"EMBEDDINGS": "local", "EMBEDDINGS_BATCH": "2"}).library)
    texts = ["Les fractions : le numérateur et le dénominateur.", "La photosynthèse des plantes.",
             "Le théorème de Pythagore dans un triangle rectangle."]
    with lanes.as_background():
        apart = await local.embed(texts, query=False)
    here = await local.embed(texts, query=False)
    assert apart.shape == (3, e5.DIMENSIONS)
    assert np.allclose(apart, here, atol=1e-5)


def test_the_lane_settings_have_defaults_and_bounds() -> None:
    settings = load_settings({})
    assert (settings.lanes.background_concurrency, settings.lanes.background_threads) == (2, 1)
    assert settings.library.index_interval_s == 30.0
    given = load_settings({"BACKGROUND_CONCURRENCY": "3", "BACKGROUND_THREADS": "2"}).lanes
    assert (given.background_concurrency, given.background_threads) == (3, 2)
    with pytest.raises(ConfigError, match=r"^BACKGROUND_THREADS"):
        load_settings({"BACKGROUND_THREADS": "0"})


def test_a_workers_turns_and_background_fit_in_its_database_pool() -> None:
    """At the defaults, every turn and background slot of a worker can be at the database at once
    without waiting for a connection (none is held across a model call: test_transactions_per_reply)."""
    from bot.storage.db import POOL_OVERFLOW, POOL_SIZE, make_engine

    settings = load_settings({})
    assert settings.worker_concurrency == 32
    engine = make_engine("postgresql+asyncpg://bot@127.0.0.1:1/none")  # made, never connected
    pool = engine.sync_engine.pool
    assert (pool.size(), pool._max_overflow) == (POOL_SIZE, POOL_OVERFLOW)  # type: ignore[attr-defined]
    needed = settings.worker_concurrency + settings.lanes.background_concurrency + settings.job_concurrency
    assert needed <= POOL_SIZE + POOL_OVERFLOW
    with pytest.raises(ConfigError, match=r"^WORKER_CONCURRENCY"):
        load_settings({"WORKER_CONCURRENCY": "0"})


def test_a_worker_loads_what_a_first_message_needs_before_it_starts() -> None:
    from bot.channel import language
    from bot.safety import meaning
    from bot.warm import warm_models

    warm_models(load_settings({}))
    assert language._identifier.cache_info().currsize == 1
    assert meaning.WEIGHTS_PATH in meaning._LOADED


def test_the_lane_process_importing_the_entry_point_again_starts_nothing() -> None:
    """A spawned child imports `python -m bot`'s module again as __mp_main__, with the parent's
    arguments: unguarded, the background lane's process started a second worker."""
    import subprocess
    import sys

    code = "import runpy, sys; sys.argv = ['bot', 'worker']; runpy.run_module('bot', run_name='__mp_main__')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DATABASE_URL": "postgresql+asyncpg://nobody@127.0.0.1:1/none"})
    assert done.returncode == 0 and "error" not in done.stderr.lower(), done.stderr
