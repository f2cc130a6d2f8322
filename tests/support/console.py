"""The operator's console as the operator runs it: `python -m bot users ARGS` (or `cohorts`,
`operators`) in its own process, on a harness's database, file store and shared state."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[2]


class Run(NamedTuple):
    code: int
    out: str
    err: str


async def users(h: Any, *args: str) -> Run:
    """`python -m bot users ARGS` with the harness's settings (logs, at INFO, go to stderr)."""
    return await console(h, "users", *args)


async def console(h: Any, *args: str, stdin: bytes | None = None) -> Run:
    """`python -m bot ARGS` with the harness's settings; `stdin` piped in (else none)."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TEST_")}, **h.env,
           "PYTHONPATH": str(ROOT), "LOG_LEVEL": "INFO"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *args, env=env, cwd=str(ROOT),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate(stdin)
    assert proc.returncode is not None
    return Run(proc.returncode, out.decode(), err.decode())
