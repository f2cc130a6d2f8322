"""When a student studies: the local hour they most often write, learned from their own messages.

A missed question comes back at that hour (bot.learning.review), and the practice nudge and the way
back after a silence (bot.learning.nudges, bot.learning.reengage) go at it, so that a student who
works every evening is not nudged at 08:00, in class.

The hour is counted in days, not messages: one long session at 15:00 weighs as much as one message
at 19:00 on another day. The hour written on the most days of the last LOOKBACK wins, a tie going to
the hour written most recently. With messages on fewer than MIN_DAYS days the latest one's hour is
the best guess there is; with none at all, DEFAULT_STUDY_HOUR.

The hour is kept on the user (`users.study_hour`) because the planners select by it in SQL, and
learned again when they wrote since, at most every RELEARN_AFTER (`learned_hour`,
`refresh_study_hours`). A nudge goes within the day, 08:00–20:00 local: `send_hour` brings an hour
outside it to its nearest end (a student who writes at 22:00 is nudged at 19:00).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from sqlalchemy import ColumnElement, and_, func, or_, select, true
from sqlalchemy.ext.asyncio import AsyncSession

from bot.clock import zone
from bot.services import Services
from bot.storage.models import InboundMessage, User

DAY_STARTS, DAY_ENDS = 8, 20  # local hours a proactive message may go: from 08:00, before 20:00
DEFAULT_STUDY_HOUR = 18  # after school, before dinner: for a student who never wrote
LOOKBACK = timedelta(days=28)
MIN_DAYS = 3
RELEARN_AFTER = timedelta(hours=20)
_STAMPS = 300  # the latest messages looked at: about ten a day over LOOKBACK
_BATCH = 200


@dataclass(frozen=True)
class StudyTime:
    """A student's study hour in their zone: when a missed question is due again."""

    hour: int
    tz: tzinfo

    def next_at(self, moment: datetime) -> datetime:
        """The first `hour`:00 local at or after `moment`."""
        local = moment.astimezone(self.tz)
        for day in (local.date(), local.date() + timedelta(days=1)):
            slot = datetime.combine(day, time(self.hour), tzinfo=self.tz)
            if slot >= local:
                return slot.astimezone(UTC)
        raise AssertionError("an hour of tomorrow is always later")  # pragma: no cover

    def day_start(self, moment: datetime) -> datetime:
        """Midnight of `moment`'s local day: its study hour is the first one after it."""
        local = moment.astimezone(self.tz)
        return datetime.combine(local.date(), time(0), tzinfo=self.tz).astimezone(UTC)


def study_hour(stamps: Iterable[datetime], tz: tzinfo) -> int:
    """The local hour (0–23) written on the most days among `stamps`; see the module's docstring."""
    days: dict[int, set[date]] = {}
    latest: dict[int, datetime] = {}
    for stamp in stamps:
        local = stamp.astimezone(tz)
        days.setdefault(local.hour, set()).add(local.date())
        if local.hour not in latest or stamp > latest[local.hour]:
            latest[local.hour] = stamp
    if not latest:
        return DEFAULT_STUDY_HOUR
    if len(set().union(*days.values())) < MIN_DAYS:
        return max(latest, key=lambda hour: latest[hour])
    return max(days, key=lambda hour: (len(days[hour]), latest[hour]))


def send_hour(hour: int | None) -> int:
    """The hour a nudge goes for a student who studies at `hour` (None: not learned yet)."""
    return min(max(DEFAULT_STUDY_HOUR if hour is None else hour, DAY_STARTS), DAY_ENDS - 1)


def _stale(user: User, now: datetime) -> bool:
    learned = user.study_hour_at
    if learned is None:
        return True
    wrote_since = user.last_inbound_at is not None and user.last_inbound_at > learned
    return wrote_since and now - learned >= RELEARN_AFTER


async def _stamps(db: AsyncSession, user: User, now: datetime) -> list[datetime]:
    rows = await db.scalars(select(InboundMessage.created_at).where(
        InboundMessage.user_id == user.id, InboundMessage.created_at >= now - LOOKBACK,
    ).order_by(InboundMessage.id.desc()).limit(_STAMPS))
    found = list(rows)
    # Messages purged or never stored (a user made by an operator): the last one the row remembers.
    return found or ([user.last_inbound_at] if user.last_inbound_at is not None else [])


async def learned_hour(db: AsyncSession, user: User, now: datetime, default_timezone: str = "") -> int:
    """The user's study hour, learned again when stale (written on the row, in the caller's transaction)."""
    if _stale(user, now):
        tz = zone(user.timezone, default_timezone) if default_timezone else zone(user.timezone)
        user.study_hour = study_hour(await _stamps(db, user, now), tz)
        user.study_hour_at = now
    return DEFAULT_STUDY_HOUR if user.study_hour is None else user.study_hour


async def study_time(db: AsyncSession, user_id: int, now: datetime) -> StudyTime | None:
    """When the student's missed questions come back: their study hour within the day, in their zone."""
    user = await db.get(User, user_id)
    if user is None:
        return None
    return StudyTime(send_hour(await learned_hour(db, user, now)), zone(user.timezone))


async def refresh_study_hours(services: Services, now: datetime) -> int:
    """Learns again the hour of students who wrote since it was last learned (a batch per call, the
    never learned first); returns how many."""
    stale = or_(User.study_hour_at.is_(None),
                and_(User.study_hour_at <= now - RELEARN_AFTER, User.last_inbound_at > User.study_hour_at))
    async with services.sessions() as db:
        users = list(await db.scalars(
            select(User).where(User.mode == "child", User.last_inbound_at.is_not(None), stale)
            .order_by(User.study_hour_at.is_not(None), User.study_hour_at, User.id).limit(_BATCH)))
        for user in users:
            await learned_hour(db, user, now, services.settings.default_timezone)
        if users:
            await db.commit()
    return len(users)


async def at_study_hour(db: AsyncSession, now: datetime, where: Sequence[ColumnElement[bool]],
                        default_timezone: str) -> ColumnElement[bool] | None:
    """As SQL: it is now the daytime of the user's zone and their send hour has come. Built per zone
    among the users `where` selects (a few zones for many users); None when no zone is in its day."""
    reached: list[ColumnElement[bool]] = []
    for name in await db.scalars(select(User.timezone).where(*where).distinct()):
        hour = now.astimezone(zone(name, default_timezone)).hour
        if not DAY_STARTS <= hour < DAY_ENDS:
            continue
        # send_hour(h) <= hour: any study hour once the day's last hour has come, else h <= hour.
        learned = func.coalesce(User.study_hour, DEFAULT_STUDY_HOUR)
        started = true() if hour >= DAY_ENDS - 1 else learned <= hour
        reached.append(and_(User.timezone == name, started))
    return or_(*reached) if reached else None
