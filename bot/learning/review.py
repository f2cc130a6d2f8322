"""When a quiz item comes back: FSRS (the `fsrs` library, right/wrong only: Good or Again).

No learning steps of minutes: a student reads WhatsApp between other things, so a missed item comes
back the next day and a right one after a few days, then further apart as it is kept. No fuzz, so
that a schedule can be checked and explained."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fsrs import Card, Rating, Scheduler

_SCHEDULER = Scheduler(learning_steps=(), relearning_steps=(), enable_fuzzing=False)


def _card(stored: dict[str, Any]) -> Card:
    # fsrs types the argument as its CardDict TypedDict; the stored JSON is what to_dict() gave.
    return Card.from_dict(stored)  # type: ignore[arg-type]  # a plain dict of CardDict's shape


def next_review(card: dict[str, Any] | None, correct: bool, now: datetime) -> tuple[dict[str, Any], datetime]:
    """The item's card after one answer, and when it is due again."""
    current = Card() if card is None else _card(card)
    rating = Rating.Good if correct else Rating.Again
    updated, _log = _SCHEDULER.review_card(current, rating, now.astimezone(UTC))
    return dict(updated.to_dict()), updated.due


def recall_probability(card: dict[str, Any] | None, now: datetime) -> float:
    """The chance the student still knows the item now (0 for one never answered)."""
    if card is None:
        return 0.0
    return float(_SCHEDULER.get_card_retrievability(_card(card), now.astimezone(UTC)))
