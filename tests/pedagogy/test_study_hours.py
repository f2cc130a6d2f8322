"""The hour a student studies, learned from their own message times, and what it moves: a missed
question's first review, at that hour at least 20 h later, and a right one's, at that hour on FSRS's
day (FSRS still schedules every interval)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from bot.learning import DEFAULT_STUDY_HOUR, StudyTime, next_review, send_hour, study_hour

ABIDJAN, LAGOS = ZoneInfo("Africa/Abidjan"), ZoneInfo("Africa/Lagos")  # UTC+0, UTC+1
MONDAY = datetime(2026, 3, 2, tzinfo=UTC)


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return MONDAY + timedelta(days=day, hours=hour, minutes=minute)


def without(card: dict[str, Any], *names: str) -> dict[str, Any]:
    """A card but its id (new for each card) and the named fields."""
    return {k: v for k, v in card.items() if k not in ("card_id", *names)}


def test_the_hour_written_on_the_most_days_wins_not_the_most_messages() -> None:
    evenings = [at(d, 19, m) for d in range(1, 8) for m in (5, 20, 40)]
    one_long_afternoon = [at(3, 15, m) for m in range(0, 60, 2)]  # 30 messages, one day
    class_time = [at(2, 10), at(5, 10)]
    assert study_hour(evenings + one_long_afternoon + class_time, ABIDJAN) == 19
    # The same moments read in the student's zone: 19:xx UTC is 20:xx in Lagos.
    assert study_hour(evenings, LAGOS) == 20


def test_a_tie_goes_to_the_hour_written_most_recently() -> None:
    assert study_hour([at(1, 7), at(2, 7), at(3, 18), at(4, 18)], ABIDJAN) == 18
    assert study_hour([at(1, 18), at(2, 18), at(3, 7), at(4, 7)], ABIDJAN) == 7


def test_too_few_days_give_the_latest_hour_and_none_the_default() -> None:
    assert study_hour([at(1, 9), at(1, 9, 30), at(2, 21)], ABIDJAN) == 21  # two days only
    assert study_hour([], ABIDJAN) == DEFAULT_STUDY_HOUR
    assert 8 <= DEFAULT_STUDY_HOUR < 20


def test_the_send_hour_stays_within_the_day() -> None:
    assert [send_hour(h) for h in (0, 7, 8, 13, 19, 22)] == [8, 8, 8, 13, 19, 19]
    assert send_hour(None) == DEFAULT_STUDY_HOUR


def test_a_missed_question_comes_back_at_the_study_hour_at_least_20_hours_later() -> None:
    evening = StudyTime(19, ABIDJAN)
    # Missed at 19:30: FSRS said 19:30 the next day, the very end of the window the answer opened;
    # now 19:00 the next day (23.5 h), inside it.
    _card, due = next_review(None, False, at(0, 19, 30), evening)
    assert due == at(1, 19)
    # Missed at noon: 19:00 the same day is too soon (7 h), so the next evening (31 h).
    assert next_review(None, False, at(0, 12), evening)[1] == at(1, 19)
    # Missed at 23:00 by a morning student: 08:00 the next morning is 9 h away; the one after.
    assert next_review(None, False, at(0, 23), StudyTime(8, ABIDJAN))[1] == at(2, 8)
    # In the student's zone: 18:00 in Lagos is 17:00 UTC.
    assert next_review(None, False, at(0, 17, 10), StudyTime(18, LAGOS))[1] == at(1, 17)


def test_a_right_answer_keeps_fsrs_day_at_the_study_hour() -> None:
    evening = StudyTime(19, ABIDJAN)
    # Right at 19:40: FSRS's day, at 19:00 (not yet due at 19:40, the nudge and the 19:20 visit of
    # that evening would have missed it); the card is FSRS's but its due date.
    card, due = next_review(None, True, at(0, 19, 40), evening)
    fsrs_card, fsrs_due = next_review(None, True, at(0, 19, 40))
    assert fsrs_due.date() > at(0, 19, 40).date() and fsrs_due.hour == 19 and fsrs_due.minute == 40
    assert due == datetime.combine(fsrs_due.date(), time(19), tzinfo=UTC)
    assert without(card, "due") == without(fsrs_card, "due")
    # Right in the morning: later on FSRS's day, at the study hour.
    _card, due = next_review(None, True, at(0, 10), evening)
    assert due == datetime.combine(next_review(None, True, at(0, 10))[1].date(), time(19), tzinfo=UTC)
    # In the student's zone: 18:00 in Lagos is 17:00 UTC, on Lagos's day of FSRS's date.
    _card, due = next_review(None, True, at(0, 10), StudyTime(18, LAGOS))
    assert due.astimezone(LAGOS).hour == 18 and due - at(0, 10) >= timedelta(days=1)
    # Never sooner than 20 h: a day's interval from 23:30 to an 08:00 student is the day after.
    _card, due = next_review(None, True, at(0, 23, 30), StudyTime(8, ABIDJAN))
    assert due - at(0, 23, 30) >= timedelta(hours=20) and due.hour == 8


def test_fsrs_keeps_every_other_step() -> None:
    evening = StudyTime(19, ABIDJAN)
    # Without a study hour (a test's or a bench's own schedule): FSRS's day after.
    assert next_review(None, False, at(0, 19, 30))[1] == at(1, 19, 30)
    # A card kept long that lapses: FSRS may give more than a day; its date less a few hours stays
    # the earliest study hour, and the card is the one FSRS computed but its due date.
    kept: dict[str, Any] | None = None
    moment = at(0, 10)
    for _ in range(6):
        kept, moment = next_review(kept, True, moment)
    fsrs_card, fsrs_due = next_review(kept, False, moment)
    card, due = next_review(kept, False, moment, evening)
    assert due >= fsrs_due - timedelta(hours=4) and due.astimezone(ABIDJAN).hour == 19
    assert without(card, "due") == without(fsrs_card, "due")
