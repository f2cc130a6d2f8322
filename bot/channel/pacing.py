"""Outbound pacing: no sender sends faster than Twilio takes, and nothing leaves too late.

Twilio takes 80 messages a second per WhatsApp sender and 1 segment a second per long-code SMS
number by default (WhatsApp best practices and FAQs; help article 360024008153). Beyond that its
REST API answers 429 / 20429 « Too Many Requests » (always safe to retry with backoff, error
20429), or queues them on its side for up to 4 h (WhatsApp; SMS up to `ValidityPeriod`, 10 h):
hours late for a reminder. So every message waits here for its moment before it is handed over.

The moments of one sender are a schedule `1/MPS` apart (TWILIO_SENDER_MPS): each send reserves the
next free one (`State.reserve`, atomic: a Lua script on Redis, shared by every process; in this
process's memory without Redis), then sleeps until it. Evenly spaced moments put at most MPS sends
in any second, with no burst after a quiet spell. An SMS of several segments takes as many moments
(Twilio counts a long code's throughput in segments). The moments are read from this process's clock
(wall time, so processes agree: their clocks are NTP-synced, and a skew of a few ms moves a send by
as much). A 20429 all the same (another deployment on the account, a lower limit) is retried by
`TwilioClient` with backoff, through the schedule again; Twilio refused it, so nothing went twice.

While the shared state does not answer (Redis down or stalled: `RESERVE_TIMEOUT_S`), each process
paces on its own schedule rather than stop sending: the processes together may then exceed the
pace, and Twilio's 20429 is retried as above.

Chat goes first. A background send (an assignment's or a template's wave, a document job's file:
`bot.lanes.in_background()`) books no moment more than BATCH_AHEAD_S ahead of now: while the
schedule is full further than that it sleeps and asks again. A wave of 2,000 messages therefore
never stands between a child's reply and the sender: the reply books the next moment after at most
BATCH_AHEAD_S of the wave's (on a 1-a-second SMS number, a 100-parent wave would otherwise hold a
reply back 100 s). Chat sends book as far ahead as they must.

A message waits at most until SEND_MAX_AGE_S after it was queued (its age read on the caller's
clock, `Services.clock`, the rest of the wait on this one): a moment later than that is not
reserved, and the message is dropped (`SendExpired`): recorded as expired by its caller, counted in
`deblo_sends_expired_total`, never reported as sent.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable

from bot import logs, metrics
from bot.lanes import in_background
from bot.storage.state import MemoryState, State, is_unavailable

__all__ = ["BATCH_AHEAD_S", "Pacer", "SenderRates", "channel_of"]

log = logging.getLogger("bot.channel.pacing")

Sleep = Callable[[float], Awaitable[None]]
RESERVE_TIMEOUT_S = 2.0  # a shared schedule that takes longer is taken as down (see above)
# How far ahead a background send may book (see above): a second keeps a wave at the sender's full
# pace (each asks again within half of it) while a chat reply waits at most that for a moment.
BATCH_AHEAD_S = 1.0


def channel_of(sender: str) -> str:
    """whatsapp for a `whatsapp:+…` sender, else sms."""
    return "whatsapp" if sender.startswith("whatsapp:") else "sms"


class SenderRates:
    """Messages a second per sender: its own address's value, else its channel's (TWILIO_SENDER_MPS)."""

    def __init__(self, pairs: tuple[tuple[str, int], ...]) -> None:
        self.rates = dict(pairs)

    def of(self, sender: str) -> int:
        own = self.rates.get(sender.lower()) or self.rates.get(sender.removeprefix("whatsapp:"))
        return own or self.rates.get(channel_of(sender), 1)


class Pacer:
    """Hands out each sender's moments. `clock` (seconds since the epoch) and `sleep` are the test's
    to replace: pacing is checked by counts per second of a clock the test moves."""

    def __init__(self, state: State | None, rates: SenderRates, *, clock: Callable[[], float] = time.time,
                 sleep: Sleep = asyncio.sleep) -> None:
        self.state: State = state if state is not None else MemoryState()
        self._alone = MemoryState()  # this process's own schedule while the shared one is down
        self.rates = rates
        self.clock = clock
        self.sleep = sleep

    async def wait(self, sender: str, max_wait_s: float = math.inf, units: int = 1) -> bool:
        """Waits for `sender`'s next moment; False (nothing reserved, no wait) when that moment is
        more than `max_wait_s` away (what is left of the message's SEND_MAX_AGE_S, measured by the
        caller's clock from when it was queued). `units`: the moments it takes (an SMS's segments)."""
        if max_wait_s < 0:
            return False
        mps = self.rates.of(sender)
        step_us = math.ceil(1_000_000 / mps) * max(1, units)  # rounded up: never more than MPS a second
        started = self.clock()
        allowed_us = 10**15 if math.isinf(max_wait_s) else int(max_wait_s * 1_000_000)
        latest_us = int(started * 1_000_000) + allowed_us
        key = f"pace:{sender}"
        if in_background():
            at_us = await self._reserve_behind_chat(key, step_us, latest_us)
        else:
            at_us = await self._reserve(key, int(started * 1_000_000), step_us, latest_us)
        if at_us is None:
            return False
        delay = at_us / 1_000_000 - self.clock()
        if delay > 0:
            metrics.SEND_PACED.labels(channel_of(sender)).inc()
            metrics.SEND_PACE_WAIT.observe(delay)
            await self.sleep(delay)
        return True

    async def _reserve_behind_chat(self, key: str, step_us: int, latest_us: int) -> int | None:
        """A background send's moment: never booked more than BATCH_AHEAD_S (or one step) ahead."""
        ahead_us = max(step_us, int(BATCH_AHEAD_S * 1_000_000))
        while True:
            now_us = int(self.clock() * 1_000_000)
            if now_us > latest_us:
                return None
            horizon_us = min(latest_us, now_us + ahead_us)
            at_us = await self._reserve(key, now_us, step_us, horizon_us)
            if at_us is not None or horizon_us == latest_us:
                return at_us
            await self.sleep(ahead_us / 2_000_000)

    async def _reserve(self, key: str, now_us: int, step_us: int, latest_us: int) -> int | None:
        try:
            async with asyncio.timeout(RESERVE_TIMEOUT_S):
                return await self.state.reserve(key, now_us, step_us, latest_us)
        except Exception as exc:
            if not (isinstance(exc, TimeoutError) or is_unavailable(exc)):
                raise
            logs.warning_sampled(log, "shared state unavailable: this process paces its sends alone",
                                 extra={"error": repr(exc)[:200]})
            return await self._alone.reserve(key, now_us, step_us, latest_us)
