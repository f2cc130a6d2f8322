"""The review policies compared: when an item comes back after an answer (None: never).

- none: the bot before the learner was kept: a quiz is asked once and a missed one never returns.
- fixed: the item comes back 1, 3, 7 then every 14 days after the previous answer, whatever it was.
- fsrs: the bot's own scheduler, `bot.learning.next_review` (FSRS, right/wrong only).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from bench.learning.student import Item
from bot.learning import next_review

Schedule = Callable[[Item, bool, float], float | None]

START = datetime(2026, 3, 2, tzinfo=UTC)  # day 0 of the simulated month
FIXED_GAPS = (1.0, 3.0, 7.0, 14.0)


def no_review(item: Item, correct: bool, now: float) -> float | None:
    return None


def fixed_intervals(item: Item, correct: bool, now: float) -> float | None:
    return now + FIXED_GAPS[min(item.answers, len(FIXED_GAPS)) - 1]


def fsrs(item: Item, correct: bool, now: float) -> float | None:
    item.card, due = next_review(item.card, correct, START + timedelta(days=now))
    return (due - START).total_seconds() / 86400


POLICIES: dict[str, Schedule] = {
    "no review (before)": no_review,
    "fixed 1-3-7-14 d": fixed_intervals,
    "FSRS (the bot's)": fsrs,
}


def due_now(items: list[Item], now: float, budget: int) -> list[Item]:
    """What a review round asks: the due items, the longest overdue first, at most `budget`."""
    due = [item for item in items if item.due is not None and item.due <= now + 1e-9]
    due.sort(key=lambda item: item.due or 0.0)
    return due[:budget]
