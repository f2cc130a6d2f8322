"""Wall-clock time through one seam, so tests can move time (weekly summaries, reminders, TTLs)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def system_now() -> datetime:
    return datetime.now(UTC)


class ManualClock:
    """A clock tests set and advance by hand."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or system_now()

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def zone(name: str | None, default: str = "Africa/Abidjan") -> ZoneInfo:
    """The named time zone, else the default, else UTC: an unknown name never fails."""
    for candidate in (name, default, "UTC"):
        if not candidate:
            continue
        try:
            return ZoneInfo(candidate)
        except (ZoneInfoNotFoundError, ValueError):
            continue
    return ZoneInfo("UTC")


Clock = Callable[[], datetime]
