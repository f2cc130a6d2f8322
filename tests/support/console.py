"""The operator's console as the operator runs it: `python -m bot users ARGS` in its own process, on a
harness's database, file store and shared state."""

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
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TEST_")}, **h.env,
           "PYTHONPATH": str(ROOT), "LOG_LEVEL": "INFO"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "users", *args, env=env, cwd=str(ROOT),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return Run(proc.returncode, out.decode(), err.decode())
