"""Per-user inbound rate: at most USER_MAX_MESSAGES_PER_MINUTE of one user's messages started per
rolling minute (0: no limit).

Someone who sends more is not refused: the rows stay `pending`, in order, and the worker looks at the
user again when the oldest start of their last minute is a minute old; the user gets one notice per
minute saying the messages will be answered shortly. A burst of one person so cannot take every
worker, nor run up the bill in a few seconds. A user who opted out is not held back: nothing of
theirs is answered any more, and their STOP is confirmed at once.

The start times are a list in the shared state (one key per user), read and written only by the
worker holding the user's lock (bot.pipeline.workers): processes never race on it. With the shared
state away the messages are not held back (the user's lock could not be taken either).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable

from sqlalchemy import func, select

from bot import metrics
from bot.channel.outbound import opted_out_now, send_to_user
from bot.services import Services
from bot.storage.models import InboundMessage, User
from bot.texts import fr_en

log = logging.getLogger("bot.pipeline.rate")

WINDOW_S = 60.0
NOTICE = (
    "Beaucoup de messages d'un coup : je les garde tous et j'y réponds dans l'ordre "
    "d'ici quelques instants.",
    "You are sending me a lot of messages at once: I am keeping them all and will answer them in "
    "order shortly.",
)


def starts_key(user_id: int) -> str:
    return f"rate:starts:{user_id}"


def _told(raw: str | None) -> tuple[float | None, int | None]:
    """(when, the newest held message's id) of the last notice, from its key's value."""
    try:
        value = json.loads(raw) if raw else None
        if isinstance(value, (int, float)):  # a notice kept before the id was: its time alone
            return float(value), None
        if isinstance(value, list) and len(value) == 2:
            return float(value[0]), None if value[1] is None else int(value[1])
    except (ValueError, TypeError):
        pass
    return None, None


def notice_key(user_id: int) -> str:
    return f"rate:notice:{user_id}"


class UserRate:
    """The limit as the pipeline of one process applies it, and when to look at a held user again."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self._held: dict[int, float] = {}  # user -> seconds until their next message may start
        self._looks: dict[int, float] = {}  # user -> monotonic time a look is already planned for

    @property
    def limit(self) -> int:
        return max(0, self.services.settings.user_max_messages_per_minute)

    def _now(self) -> float:
        # The service clock (tests move it), the same in every process of a deployment.
        return self.services.clock().timestamp()

    async def _starts(self, user_id: int) -> list[float]:
        raw = await self.services.state.kv_get(starts_key(user_id))
        try:
            starts = [float(t) for t in json.loads(raw)] if raw else []
        except (ValueError, TypeError):
            starts = []
        since = self._now() - WINDOW_S
        return sorted(t for t in starts if t > since)

    async def holds_back(self, user_id: int, has_work: Callable[[int], Awaitable[bool]]) -> bool:
        """Whether the user's next message must wait: the limit is reached within the last minute
        and `has_work(user_id)` says a message waits. Counts the postponement and tells the user,
        once per minute."""
        limit = self.limit
        if limit == 0:
            return False
        try:
            starts = await self._starts(user_id)
        except Exception:
            log.warning("could not read a user's rate; not held back", extra={"user_id": user_id})
            return False
        if len(starts) < limit or not await has_work(user_id):
            return False
        if await opted_out_now(self.services, user_id):
            return False  # nothing is answered any more: their STOP is confirmed now, not in a minute
        self._held[user_id] = max(0.05, starts[-limit] + WINDOW_S - self._now())
        metrics.RATE_LIMITED.labels("postponed").inc()
        await self._notify(user_id)
        return True

    async def started(self, user_id: int) -> None:
        """Notes that one of the user's messages starts now."""
        if self.limit == 0:
            return
        try:
            starts = [*await self._starts(user_id), self._now()]
            await self.services.state.kv_set(starts_key(user_id), json.dumps([round(t, 3) for t in starts]),
                                             WINDOW_S * 2)
        except Exception:
            log.warning("could not note a user's rate", extra={"user_id": user_id})

    def next_look(self, user_id: int, default_s: float) -> float | None:
        """In how many seconds the pipeline should look at this user again: `default_s`, or for a
        user held back the rest of their minute; None when a look is already planned by then (the
        sweeper queues held users too: one wake-up per window is enough)."""
        held = self._held.pop(user_id, None)
        if held is None:
            return default_s
        now = time.monotonic()
        planned = self._looks.get(user_id, 0.0)
        if now < planned <= now + held + 0.05:
            return None
        self._looks[user_id] = now + held
        for other, at in list(self._looks.items()):  # forget the looks that are past
            if at < now:
                del self._looks[other]
        return held

    async def _notify(self, user_id: int) -> None:
        """One notice per user and minute, and only for messages it has not told of yet: held
        messages looked at again after a minute (a sweep racing the release) get no second notice.
        The time and the newest held message's id are kept in the value (the service clock decides)."""
        state, now = self.services.state, self._now()
        async with self.services.sessions() as db:
            user = await db.get(User, user_id)
            newest = await db.scalar(select(func.max(InboundMessage.id)).where(
                InboundMessage.user_id == user_id, InboundMessage.status == "pending"))
        told_at, told_newest = _told(await state.kv_get(notice_key(user_id)))
        if told_at is not None and 0 <= now - told_at < WINDOW_S:
            return
        if told_newest is not None and newest is not None and newest <= told_newest:
            return
        await state.kv_set(notice_key(user_id), json.dumps([now, newest]), WINDOW_S * 2)
        if user is None:
            return
        fr, en = NOTICE
        try:
            # Tied to no message: the held ones are answered in full later, whatever this notice did.
            await send_to_user(self.services, user, text=fr_en(user.language, fr, en), kind="notice")
        except Exception:
            log.exception("could not send the rate notice", extra={"user_id": user_id})
            return
        metrics.RATE_LIMITED.labels("notice").inc()
        log.info("messages held back by the rate limit", extra={"user_id": user_id})
