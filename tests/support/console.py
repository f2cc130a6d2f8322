"""The operator's console as the operator runs it: `python -m bot users ARGS` (or `cohorts`,
`operators`) in its own process, on a harness's database, file store and shared state.

The first command of each test module starts a fresh interpreter; the others are forks of one
helper that imported the bot once (tests/support/console_forks.py), which behave as that fresh
process would and skip its second of start-up."""

from __future__ import annotations

import asyncio
import atexit
import os
import sys
from pathlib import Path
from typing import Any, NamedTuple

from tests.support.console_forks import ConsoleForks

ROOT = Path(__file__).resolve().parents[2]
_forks = ConsoleForks()
atexit.register(_forks.close)
_modules_run_fresh: set[str] = set()


class Run(NamedTuple):
    code: int
    out: str
    err: str


async def users(h: Any, *args: str, fresh: bool = False) -> Run:
    """`python -m bot users ARGS` with the harness's settings (logs, at INFO, go to stderr)."""
    return await console(h, "users", *args, fresh=fresh)


async def console(h: Any, *args: str, stdin: bytes | None = None, fresh: bool = False) -> Run:
    """`python -m bot ARGS` with the harness's settings; `stdin` piped in (else none). `fresh`: in
    a new interpreter, as the first command of each test module is anyway."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TEST_")}, **h.env,
           "PYTHONPATH": str(ROOT), "LOG_LEVEL": "INFO"}
    module = os.environ.get("PYTEST_CURRENT_TEST", "").split("::", 1)[0]
    if fresh or module not in _modules_run_fresh:
        _modules_run_fresh.add(module)
        return await _fresh(list(args), env, stdin)
    code, out, err = await asyncio.to_thread(_forks.run, list(args), env, str(ROOT), stdin)
    return Run(code, out.decode(), err.decode())


async def _fresh(args: list[str], env: dict[str, str], stdin: bytes | None) -> Run:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *args, env=env, cwd=str(ROOT),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate(stdin)
    assert proc.returncode is not None
    return Run(proc.returncode, out.decode(), err.decode())
