"""When a quiz item comes back: FSRS (the `fsrs` library, right/wrong only: Good or Again).

No learning steps of minutes: a student reads WhatsApp between other things, so a missed item comes
back the next day and a right one after a few days, then further apart as it is kept. No fuzz, so
that a schedule can be checked and explained.

A missed item's next review is moved to the student's study hour (bot.learning.study_hours), at
least MIN_AFTER_MISS later: FSRS's one day after the answer fell as often in class as at home, and
a nudge can only go while WhatsApp's 24 h window is open, which the student's return opens. Due
exactly 24 h after an answer given at 19:30, the item met the window that answer opened only at its
very end; due at 19:00 the next evening, it is there while the window is open, and the evening the
student comes back.

A right answer keeps FSRS's day (its intervals are whole days) but comes back at the study hour of
that day: due at the minute it was answered, an item answered at 19:40 was not yet due when the
19:00 nudge or the next 19:20 visit came, and waited a day more. Never sooner than MIN_AFTER_MISS.
FSRS computes every step; only the moment of the due day changes (the card is what it computed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fsrs import Card, Rating, Scheduler

from bot.learning.study_hours import StudyTime

# Not the same evening: the next study hour at least this long after an answer.
MIN_AFTER_MISS = timedelta(hours=20)
# When FSRS gives a miss more than a day, its due date less this much is the earliest study hour.
_EARLIER_BY = timedelta(hours=4)
_SCHEDULER = Scheduler(learning_steps=(), relearning_steps=(), enable_fuzzing=False)


def _card(stored: dict[str, Any]) -> Card:
    # fsrs types the argument as its CardDict TypedDict; the stored JSON is what to_dict() gave.
    return Card.from_dict(stored)  # type: ignore[arg-type]  # a plain dict of CardDict's shape


def next_review(card: dict[str, Any] | None, correct: bool, now: datetime,
                study: StudyTime | None = None) -> tuple[dict[str, Any], datetime]:
    """The item's card after one answer, and when it is due again: at the student's study hour
    (`study`) when it is known, after a miss the first one at least MIN_AFTER_MISS later, after a
    right answer the one of FSRS's day."""
    current = Card() if card is None else _card(card)
    rating = Rating.Good if correct else Rating.Again
    updated, _log = _SCHEDULER.review_card(current, rating, now.astimezone(UTC))
    if study is not None:
        earliest = updated.due - _EARLIER_BY if not correct else study.day_start(updated.due)
        updated.due = study.next_at(max(now + MIN_AFTER_MISS, earliest))
    return dict(updated.to_dict()), updated.due


def recall_probability(card: dict[str, Any] | None, now: datetime) -> float:
    """The chance the student still knows the item now (0 for one never answered)."""
    if card is None:
        return 0.0
    return float(_SCHEDULER.get_card_retrievability(_card(card), now.astimezone(UTC)))
