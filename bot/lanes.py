"""Chat first: the work of a process runs in one of two lanes, and background work never takes
what answering chat needs.

The chat lane is the message workers (bot.pipeline.workers): WORKER_CONCURRENCY turns on the event
loop, their blocking calls on the loop's default executor. The background lane is everything else
that a worker does on its own time: the periodic passes (assignment and template waves, reminders,
summaries, the library's index and embeddings, retention) and the background jobs. It has

- its own slots: at most BACKGROUND_CONCURRENCY periodic passes at once per process (the jobs have
  JOB_CONCURRENCY), so a wave that falls with the index pass does not double what runs beside chat;
- its own threads: CPU work of the lane (cutting a file, rasterising a scan) goes to
  BACKGROUND_THREADS threads of its own through `cpu`, never the loop's default executor, where a
  batch of 500 files would queue ahead of a child's message's safety check or language detection;
- its own process for work that holds the interpreter's lock (`cpu(..., process=True)`: the local
  model embedding a file's chunks). In a thread it held the lock so much that the event loop beside
  it turned half as often and chat's p95 quadrupled (bench.scale --background); a child process of
  the lowest priority (nice 19) leaves the loop alone and lets the system favour chat for the cores.

Which lane runs is a context variable set by whoever starts the work (`background_slot`,
`as_background`), so shared code (the library's index, called by an upload in a turn and by the
pass) asks `in_background()` instead of being told.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import functools
import multiprocessing
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

__all__ = ["DEFAULT_THREADS", "Lane", "as_background", "background_slot", "configure", "cpu", "in_background"]

T = TypeVar("T")

DEFAULT_THREADS = 1  # one core of two stays free for chat on the 2-core deployment

_BACKGROUND: contextvars.ContextVar[bool] = contextvars.ContextVar("deblo_background_lane", default=False)
_EXECUTOR: list[concurrent.futures.ThreadPoolExecutor] = []
_PROCESS: list[concurrent.futures.ProcessPoolExecutor] = []
_THREADS = [DEFAULT_THREADS]
_GUARD = threading.Lock()
# The background process's priority: the lowest. At 10 chat's p95 still rose 37 % beside the batch
# on the shared 2-core machine (bench.scale --background); the batch goes on whenever a core rests.
NICE = 19


def in_background() -> bool:
    """Whether the running code is background work (a periodic pass or a background job)."""
    return _BACKGROUND.get()


def configure(threads: int) -> None:
    """The number of background threads of this process (BACKGROUND_THREADS); takes effect for an
    executor made after it (the first background `cpu` call makes it)."""
    with _GUARD:
        _THREADS[0] = max(1, threads)


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    with _GUARD:
        if not _EXECUTOR:
            made = concurrent.futures.ThreadPoolExecutor(_THREADS[0], thread_name_prefix="background")
            _EXECUTOR.append(made)
        return _EXECUTOR[0]


def _lower_priority() -> None:
    os.nice(NICE)


def _process() -> concurrent.futures.ProcessPoolExecutor:
    with _GUARD:
        if not _PROCESS:
            # spawn: this process has threads (Dramatiq's, the database driver's), which fork copies
            # half-way; the child imports only the module of the function it runs.
            context = multiprocessing.get_context("spawn")
            _PROCESS.append(concurrent.futures.ProcessPoolExecutor(1, mp_context=context,
                                                                   initializer=_lower_priority))
            atexit.register(_PROCESS[0].shutdown)  # before the interpreter takes its modules apart
        return _PROCESS[0]


async def cpu(fn: Callable[..., T], *args: object, process: bool = False) -> T:
    """`fn(*args)` off the event loop. Chat's work: in a thread of the loop's default executor (as
    asyncio.to_thread). Background work: in the lane's own threads, or with `process` (a
    module-level `fn` whose arguments pickle) in the lane's process of lower priority."""
    if not in_background():
        return await asyncio.to_thread(fn, *args)
    loop = asyncio.get_running_loop()
    if process:
        return await loop.run_in_executor(_process(), functools.partial(fn, *args))
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    return await loop.run_in_executor(_executor(), call)


@contextlib.contextmanager
def as_background() -> Iterator[None]:
    """Marks the work run inside as background (its tasks started inside inherit it)."""
    token = _BACKGROUND.set(True)
    try:
        yield
    finally:
        _BACKGROUND.reset(token)


class Lane:
    """The background lane's slots in one process: `slot()` waits for one of `concurrency`."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = max(1, concurrency)
        self._slots = asyncio.Semaphore(self.concurrency)
        self.running = 0

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self._slots:
            self.running += 1
            token = _BACKGROUND.set(True)
            try:
                yield
            finally:
                _BACKGROUND.reset(token)
                self.running -= 1


@contextlib.asynccontextmanager
async def background_slot(lane: Lane | None) -> AsyncIterator[None]:
    """One of `lane`'s slots, or, without a lane, the background mark alone."""
    if lane is None:
        with as_background():
            yield
        return
    async with lane.slot():
        yield
