"""Waiting for something the system does in the background, without a fixed sleep."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


async def eventually(check: Callable[[], Awaitable[bool]], timeout_s: float = 30.0) -> None:
    """Returns once `check()` is true; fails after `timeout_s` (a bound for a stuck test, not a
    speed asserted: the check is asked every 50 ms)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not await check():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)
