"""The learner sees their own progress: the streak in PROGRES (days in a row with a checked answer, in
the student's zone, broken by a day without), BILAN / SUMMARY, and the weekly note on WhatsApp inside
the 24 h window in the student's evening, once a week, never with BILAN NON, after STOP, on a gentle
day or by SMS. Through the real webhook, pipeline, FakeTwilio and FakeLLM."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from bot.learning import send_weekly_notes
from bot.storage.models import SafetyFlag, ScheduledSend, User
from tests.support.learner import add_mastery, add_results, wrote
from tests.support.pedagogy import MCQ_ARGS, OTHER, STUDENT, ask_quiz, say
from tests.support.safety import DISTRESS

MONDAY = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)  # 10:00 in Abidjan (UTC), ISO week 10
ENROLLED = MONDAY - timedelta(days=10)
THIRD = "+2250700000005"


async def quiz_answers(h: Any, phone: str, at: datetime, answers: list[tuple[str, bool]]) -> None:
    """A session at `at`: each (topic, right) a quiz asked by the tutor and answered."""
    h.clock.now = at
    for n, (topic, right) in enumerate(answers):
        await ask_quiz(h, phone=phone, args={**MCQ_ARGS, "topic": topic}, first=n == 0)
        await say(h, phone, "2" if right else "1")


async def progres(h: Any, phone: str, at: datetime) -> str:
    h.clock.now = at
    text, *chart = await say(h, phone, "PROGRES")  # on WhatsApp its chart follows
    assert chart in ([], [""])
    return text


async def test_the_streak_in_progres_counts_days_in_a_row_in_the_students_zone(harness: Any) -> None:
    h = harness
    h.clock.now = MONDAY
    await h.make_user(STUDENT, mode="child", timezone="Africa/Lagos")  # UTC+1
    await h.make_user(OTHER, mode="child", timezone="Africa/Abidjan")  # UTC
    # The same answers: Monday 23:30 UTC is already Tuesday in Lagos, still Monday in Abidjan.
    for at in (MONDAY.replace(hour=23, minute=30), MONDAY + timedelta(days=1, hours=2),
               MONDAY + timedelta(days=2)):
        for phone in (STUDENT, OTHER):
            await quiz_answers(h, phone, at, [("fractions", True)])
    wednesday = MONDAY + timedelta(days=2, hours=1)
    assert "🔥 2 jours de suite" in await progres(h, STUDENT, wednesday)  # Tuesday, Wednesday
    assert "🔥 3 jours de suite" in await progres(h, OTHER, wednesday)  # Monday to Wednesday
    # In English for whoever chose it.
    async with h.services.sessions() as db:
        row = await db.scalar(select(User).where(User.phone == OTHER))
        assert row is not None
        row.language = "en"
        await db.commit()
    assert "🔥 3 days in a row" in await progres(h, OTHER, wednesday + timedelta(minutes=30))
    # Thursday morning, nothing done yet today: the streak still stands.
    assert "🔥 2 jours de suite" in await progres(h, STUDENT, MONDAY + timedelta(days=3))
    # A day without (Thursday): on Friday the streak is gone, and one answer starts it again.
    friday = MONDAY + timedelta(days=4)
    assert "🔥" not in await progres(h, STUDENT, friday)
    await quiz_answers(h, STUDENT, friday + timedelta(hours=1), [("fractions", False)])
    text = await progres(h, STUDENT, friday + timedelta(hours=2))
    assert text.splitlines()[:2] == ["📊 Progrès", "🔥 1 jour de suite"]


async def test_the_weekly_note_once_a_week_inside_the_window_with_the_weeks_figures(harness: Any) -> None:
    h = harness
    h.clock.now = MONDAY
    await h.make_user(STUDENT, mode="child", created_at=ENROLLED)
    # Monday to Thursday: 12 questions, 9 right; the three missed on « les fractions ».
    for day in range(4):
        await quiz_answers(h, STUDENT, MONDAY + timedelta(days=day),
                           [("les fractions" if day < 3 else "multiplication", day == 3),
                            ("multiplication", True), ("multiplication", True)])
    thursday = MONDAY + timedelta(days=3)
    h.clock.now = thursday.replace(hour=9, minute=55)  # before the hour they study (10:00): nothing
    assert await send_weekly_notes(h.services, h.clock()) == 0
    h.clock.now = thursday.replace(hour=10, minute=45)
    await h.run_jobs("weekly_notes")  # the registered job
    [note] = [m["Body"] for m in h.twilio.to(f"whatsapp:{STUDENT}") if "Cette semaine" in m.get("Body", "")]
    assert note == ("📅 Cette semaine : 12 questions, 9 justes, 4 jours de suite ; à revoir : les fractions. "
                    "(BILAN NON : plus de bilan)")
    sent = len(h.twilio.sent)
    for later in (timedelta(hours=1), timedelta(days=1, hours=1)):  # the same evening, the next one
        h.clock.now = thursday.replace(hour=10, minute=45) + later
        await wrote(h, STUDENT, h.clock() - timedelta(hours=2))
        assert await send_weekly_notes(h.services, h.clock()) == 0
    assert len(h.twilio.sent) == sent
    # The next week: one more, with that week's figures.
    await quiz_answers(h, STUDENT, thursday + timedelta(days=7), [("multiplication", True)])
    h.clock.now = (thursday + timedelta(days=7)).replace(hour=18)
    assert await send_weekly_notes(h.services, h.clock()) == 1
    assert h.twilio.sent[-1]["Body"].startswith("📅 Cette semaine : 1 question, 1 juste, 1 jour de travail ;")
    assert all(m["To"].startswith("whatsapp:") for m in h.twilio.sent)  # never by SMS
    async with h.services.sessions() as db:
        keys = [s.key for s in await db.scalars(
            select(ScheduledSend).where(ScheduledSend.kind == "weekly_note").order_by(ScheduledSend.id))]
    user = await h.user(STUDENT)
    assert user is not None and keys == [f"weekly:{user.id}:2026-W10", f"weekly:{user.id}:2026-W11"]


async def _worked(h: Any, phone: str, **fields: Any) -> User:
    """A student enrolled for a while who answered 3 questions this week and wrote this morning."""
    user = await h.make_user(phone, mode="child", **{"created_at": ENROLLED, **fields})
    await add_results(h.services, user.id, [("Mathématiques", True), ("Mathématiques", False),
                                            ("Mathématiques", True)], MONDAY)
    await add_mastery(h.services, user.id, "Mathématiques", "les fractions", 0.3, 3, 2, MONDAY)
    await wrote(h, phone, MONDAY)
    return user


async def test_no_note_with_bilan_non_until_bilan_oui(harness: Any) -> None:
    h = harness
    h.clock.now = MONDAY
    await _worked(h, STUDENT)
    assert await say(h, STUDENT, "BILAN NON") == [
        "C'est noté : plus de bilan de la semaine. Écris BILAN quand tu veux voir le tien, ou BILAN OUI "
        "pour le recevoir à nouveau chaque semaine."]
    assert (await h.user(STUDENT)).weekly_progress_notes is False
    await wrote(h, STUDENT, MONDAY)
    h.clock.now = MONDAY.replace(hour=17, minute=30)
    assert await send_weekly_notes(h.services, h.clock()) == 0
    h.clock.now = MONDAY.replace(hour=18)
    [on] = await say(h, STUDENT, "bilan oui")
    assert on.startswith("C'est noté : chaque semaine") and (await h.user(STUDENT)).weekly_progress_notes
    h.clock.now = MONDAY.replace(hour=18, minute=45)  # quiet for 45 minutes: the note goes
    assert await send_weekly_notes(h.services, h.clock()) == 1
    assert h.twilio.sent[-1]["Body"] == (
        "📅 Cette semaine : 3 questions, 2 justes, 1 jour de travail ; à revoir : les fractions. "
        "(BILAN NON : plus de bilan)")


async def test_no_note_after_stop_on_a_gentle_day_outside_the_window_or_in_the_middle_of_a_session(
        harness: Any) -> None:
    h = harness
    h.clock.now = MONDAY
    await _worked(h, STUDENT)
    await say(h, STUDENT, "STOP")
    await _worked(h, OTHER)
    await say(h, OTHER, DISTRESS)  # a gentle day
    await _worked(h, THIRD)
    await wrote(h, THIRD, MONDAY - timedelta(hours=20))  # 25 h before the evening: the window closed
    await _worked(h, "+2250700000006", created_at=MONDAY - timedelta(days=2))  # enrolled Saturday
    sms = await _worked(h, "+2250700000007", last_channel="sms")
    async with h.services.sessions() as db:
        row = await db.get(User, sms.id)
        assert row is not None
        row.last_whatsapp_inbound_at = None  # writes by SMS only
        await db.commit()
    await _worked(h, "+2250700000008")
    h.clock.now = MONDAY.replace(hour=17, minute=10)
    await wrote(h, "+2250700000008", h.clock() - timedelta(minutes=5))  # in the middle of a session
    assert await send_weekly_notes(h.services, h.clock()) == 0
    assert not [m for m in h.twilio.sent if "Cette semaine" in m.get("Body", "")]
    # A day after the flag, once a person saw it: the note goes (the window open again).
    async with h.services.sessions() as db:
        flag = await db.scalar(select(SafetyFlag))
        assert flag is not None
        flag.acknowledged_at = MONDAY + timedelta(hours=1)
        await db.commit()
    await wrote(h, OTHER, MONDAY + timedelta(days=1, hours=-2))  # Tuesday 08:00
    h.clock.now = MONDAY + timedelta(days=1, hours=8)  # Tuesday 18:00
    assert await send_weekly_notes(h.services, h.clock()) == 1
    assert [m["To"] for m in h.twilio.sent if "Cette semaine" in m.get("Body", "")] == [f"whatsapp:{OTHER}"]


async def test_bilan_shows_the_week_now_in_the_students_language(harness: Any) -> None:
    h = harness
    h.clock.now = MONDAY
    await h.make_user(STUDENT, mode="child")
    assert await say(h, STUDENT, "BILAN") == [
        "Pas encore de réponse vérifiée cette semaine. Demande-moi un quiz pour commencer !"]
    await _worked(h, OTHER, language="en")
    assert await say(h, OTHER, "summary") == [
        "📅 This week: 3 questions, 2 right, 1 day of practice; to review: les fractions."]
    [off] = await say(h, OTHER, "SUMMARY OFF")
    assert off.startswith("Done: no more weekly summary.")
    assert (await h.user(OTHER)).weekly_progress_notes is False
