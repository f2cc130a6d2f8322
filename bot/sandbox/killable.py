"""Runs CPU-bound or blocking sync work in a separate process that is killed on timeout or cancel.

A thread cannot be stopped, so a tool whose sync work hangs (a PDF library stuck on a document, a
runaway computation) would keep running after the loop gave up on it. `run_killable` runs the
function in a child process and kills it when the awaiting task is cancelled (the executor's
per-tool timeout cancels it) or when its own timeout passes.

The function and its arguments must be picklable (a module-level function), as must the result.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, TypeVar, cast

from bot.sandbox.errors import SandboxError

T = TypeVar("T")

# forkserver: children start from a clean process, not a copy of this one with its threads and locks.
_CTX = multiprocessing.get_context("forkserver")


class KillableError(SandboxError):
    """The function raised in the child; the message carries its traceback."""


def _child(conn: Connection, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    try:
        conn.send(("ok", fn(*args, **kwargs)))
    except BaseException as exc:  # report everything: the parent decides
        conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}"))
    finally:
        conn.close()


async def run_killable(fn: Callable[..., T], *args: Any, timeout_s: float | None = None, **kwargs: Any) -> T:
    """Runs `fn(*args, **kwargs)` in a child process; kills it on timeout or cancellation."""
    loop = asyncio.get_running_loop()
    parent, child = _CTX.Pipe(duplex=False)
    process = _CTX.Process(target=_child, args=(child, fn, args, kwargs), daemon=True)
    await loop.run_in_executor(None, process.start)
    child.close()
    ready: asyncio.Future[None] = loop.create_future()

    def on_readable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(parent.fileno(), on_readable)
    try:
        async with asyncio.timeout(timeout_s):
            await ready
        try:
            status, value = parent.recv()
        except EOFError:
            raise KillableError(f"the worker process died (exit code {process.exitcode})") from None
        if status == "error":
            raise KillableError(value)
        return cast(T, value)  # what fn returned, unpickled from the pipe
    finally:
        loop.remove_reader(parent.fileno())
        parent.close()
        if process.is_alive():
            process.kill()
        await loop.run_in_executor(None, process.join, 5)
        process.close()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
