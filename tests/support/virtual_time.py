"""A clock of seconds that moves only when every watched task waits on it (pacing tests).

`VirtualTime` is a clock (`vt()`, seconds since the epoch) and a `sleep` to give the pacer (and so
the Twilio client's backoff) in place of `time.time` and `asyncio.sleep`. `run(coroutines)` runs
them until they end: whenever every one not yet done is asleep on `vt.sleep`, none is sending,
reading the database or waiting for the stand-in, so the clock jumps to the earliest wake-up.
Nothing ever waits for real seconds, and a send made at a moment reaches the stand-in (reading the
same clock) within that moment: pacing is checked by counts per second, never by times.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Coroutine
from typing import Any

__all__ = ["VirtualTime"]


class VirtualTime:
    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start  # a whole second: the windows are [k, k + 1)
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def __call__(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        if delay <= 0:
            await asyncio.sleep(0)
            return
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + delay, next(self._order), woken))
        await woken

    def _asleep(self) -> int:
        return sum(1 for _, _, woken in self._sleepers if not woken.done())

    async def run(self, coroutines: list[Coroutine[Any, Any, Any]], max_steps: int = 100_000) -> list[Any]:
        """Runs the coroutines to their end on this clock; their results in order."""
        tasks = [asyncio.ensure_future(c) for c in coroutines]
        for _ in range(max_steps):
            alive = sum(1 for t in tasks if not t.done())
            if alive == 0:
                return [t.result() for t in tasks]
            if alive == self._asleep():
                at = self._sleepers[0][0]
                self.now = max(self.now, at)
                while self._sleepers and self._sleepers[0][0] <= self.now:
                    _, _, woken = heapq.heappop(self._sleepers)
                    if not woken.done():
                        woken.set_result(None)
            await asyncio.sleep(0.001)  # real time for the database, Redis and the stand-in to answer
        for task in tasks:
            task.cancel()
        raise AssertionError(f"still running after {max_steps} steps")
