"""Per-subject progress and the weekly slot arithmetic, on a real (SQLite) database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.learning.progress import format_progress, latest_summary_slot, subject_stats, weekly_text
from bot.services import Services
from bot.storage.models import ExerciseResult
from tests.support.pedagogy import START, make_student


async def test_subjects_merge_case_and_split_weeks(unit_services: Services) -> None:
    user, conversation = await make_student(unit_services)
    other, _ = await make_student(unit_services, "+2250705060708")
    rows = [
        ("Maths", True, 1), ("maths", True, 2), ("MATHS ", False, 3),  # this week: 2/3
        ("Maths", True, 9), ("Maths", False, 10),  # the week before: 1/2
        ("Maths", True, 20),  # older: counts in the total only
        ("Français", False, 0),
    ]
    async with unit_services.sessions() as db:
        for subject, correct, days_ago in rows:
            db.add(ExerciseResult(user_id=user.id, conversation_id=conversation.id, subject=subject,
                                  correct=correct, created_at=START - timedelta(days=days_ago, minutes=1)))
        db.add(ExerciseResult(user_id=other.id, subject="Maths", correct=False, created_at=START))
        await db.commit()
        stats = await subject_stats(db, user.id, START)
    maths, french = stats
    # Free-text subjects of old rows are merged under their canonical subject when read.
    assert (maths.subject, maths.total, maths.correct) == ("Mathématiques", 6, 4)
    assert (maths.last7_total, maths.last7_correct, maths.prev7_total, maths.prev7_correct) == (3, 2, 2, 1)
    assert (french.subject, french.total, french.correct) == ("Français", 1, 0)
    text = format_progress(stats, "fr")
    assert "Maths : 6 questions, 67 % justes" in text
    assert "7 derniers jours : 2/3 (67 %), 7 jours d'avant : 1/2 (50 %)" in text
    assert "Your progress" in format_progress(stats, "en")
    assert "Pas encore" in format_progress([], "fr")
    weekly = weekly_text(stats, "Awa", "fr")
    assert "Awa a répondu à 4 questions, 50 % justes (semaine d'avant : 50 %)" in weekly
    assert "Maths 2/3, Français 0/1." in weekly
    assert "aucun exercice" in weekly_text([], "Awa", "fr")


def test_latest_slot() -> None:
    sunday_18 = datetime(2026, 3, 8, 18, 0, tzinfo=UTC)
    assert latest_summary_slot(sunday_18, 6, 18, "UTC") == sunday_18
    assert latest_summary_slot(sunday_18 + timedelta(hours=30), 6, 18, "UTC") == sunday_18
    before = latest_summary_slot(sunday_18 - timedelta(minutes=1), 6, 18, "UTC")
    assert before == sunday_18 - timedelta(days=7)
    # In Paris (UTC+1 in March) the slot is 17:00 UTC.
    paris = latest_summary_slot(sunday_18, 6, 18, "Europe/Paris")
    assert paris == datetime(2026, 3, 8, 17, 0, tzinfo=UTC)


async def test_results_without_a_known_subject_are_shown_under_other(unit_services: Services) -> None:
    user, _ = await make_student(unit_services)
    async with unit_services.sessions() as db:
        db.add(ExerciseResult(user_id=user.id, subject="  ", correct=True,
                              created_at=START - timedelta(hours=1)))
        db.add(ExerciseResult(user_id=user.id, subject="Cuisine", correct=False,
                              created_at=START - timedelta(hours=1)))
        await db.commit()
        stats = await subject_stats(db, user.id, START)
    assert "• Autre : 2 questions, 50 % justes" in format_progress(stats, "fr")
    assert "• Other: 2 questions, 50% right" in format_progress(stats, "en")
