"""Nudges that can be read: a missed question comes back at the student's study hour (the hour they
most often write) at least 20 h later, and the nudge goes at that hour on a day the window is open,
with the buttons « Réviser » and « Plus tard » and a round's count, never in class for a student who
works in the evening. Through the real webhook, pipeline, jobs and FakeTwilio."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bot.learning import ROUND_SIZE, send_review_nudges
from tests.support.learner import add_item, items_of
from tests.support.pedagogy import STUDENT, ask_quiz, say
from tests.support.study import buttons, days_at, run_at, tap, wrote_at

MONDAY = datetime(2026, 3, 2, tzinfo=UTC)  # Abidjan is UTC
MORNING = "+2250700000005"


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return MONDAY + timedelta(days=day, hours=hour, minutes=minute)


async def nudges_at(h: Any, *moments: datetime) -> list[int]:
    return await run_at(h, "review_nudges", *moments)


async def test_the_missed_question_is_nudged_at_their_hour_the_day_they_come_back(harness: Any) -> None:
    h = harness
    h.clock.now = at(-7, 18)
    user = await h.make_user(STUDENT, mode="child")
    await wrote_at(h, user.id, days_at(at(-1, 18, 10), 6))  # a student of the early evening
    h.clock.now = at(0, 12)  # but today at noon: a quiz, missed
    await ask_quiz(h)
    verdict = await say(h, STUDENT, "1")
    assert verdict[0].startswith("❌")
    [item] = await items_of(h, user.id)
    # Not 12:00 tomorrow (FSRS's day, in class) nor 18:00 today (6 h): 18:00 tomorrow.
    assert item.due_at == at(1, 18) and item.last_correct is False
    # Tomorrow: before 18:00 nothing is due; at 18:00 the window the answer opened has closed.
    assert await nudges_at(h, at(1, 10), at(1, 18)) == [0, 0]
    # The day after, they come back in the morning (the session's first message offers it too).
    h.clock.now = at(2, 9)
    h.llm.push_text("Bonjour ! On reprend ?")
    # The offer rides with the answer, in the same message.
    offer = "📝 1 question à revoir — écris REVISION"
    assert (await say(h, STUDENT, "Bonjour")) == [f"Bonjour ! On reprend ?\n\n{offer}"]
    # Nothing during the day; at their hour, one nudge with its buttons, and no second one.
    assert await nudges_at(h, at(2, 12), at(2, 17, 55), at(2, 18), at(2, 19)) == [0, 0, 1, 0]
    nudge = h.twilio.to(f"whatsapp:{STUDENT}")[-1]
    assert h.twilio.shown(nudge).startswith("🔁 1 question à revoir — écris REVISION")
    assert buttons(nudge) == [("Réviser", "revise:1"), ("Plus tard", "revise:2")]
    # « Réviser » starts the round, as REVISION does.
    h.clock.now = at(2, 18, 20)
    texts = await tap(h, STUDENT, "revise:1", "Réviser")
    assert texts[0].startswith("1 question à revoir. C'est parti !") and "Révision 1/1" in texts[0]


async def test_no_nudge_in_class_hours_for_an_evening_student(harness: Any) -> None:
    h = harness
    h.clock.now = at(-8, 19)
    evening = await h.make_user(STUDENT, mode="child")
    morning = await h.make_user(MORNING, mode="child")
    await wrote_at(h, evening.id, days_at(at(-1, 19, 20), 7))
    await wrote_at(h, morning.id, [*days_at(at(-1, 7, 10), 6), at(-1, 21)])  # and once late yesterday
    for user in (evening, morning):
        for n in range(12):  # a backlog: a round takes ROUND_SIZE of it
            await add_item(h.services, user.id, at(-1, 18) - timedelta(hours=n))
    # 08:00: the morning student, not the evening one; then nothing all day; 19:00: the evening one.
    sent = await nudges_at(h, at(0, 8), at(0, 10), at(0, 14), at(0, 17), at(0, 18, 55), at(0, 19))
    assert sent == [1, 0, 0, 0, 0, 1]
    [to_morning] = h.twilio.to(f"whatsapp:{MORNING}")
    [to_evening] = h.twilio.to(f"whatsapp:{STUDENT}")
    assert h.twilio.shown(to_evening).startswith(f"🔁 {ROUND_SIZE} questions à revoir")  # not 12
    assert "12" not in h.twilio.shown(to_evening) and "12" not in h.twilio.shown(to_morning)
    # « Plus tard »: a word back, no round.
    h.clock.now = at(0, 19, 5)
    texts = await tap(h, STUDENT, "revise:2", "Plus tard")
    assert texts == ["D'accord, à plus tard ! Écris REVISION quand tu veux réviser."]
    # Once a day: nothing more today.
    assert await send_review_nudges(h.services, at(0, 19, 30)) == 0


async def test_a_sessions_offer_says_a_round_never_the_backlog(harness: Any) -> None:
    h = harness
    h.clock.now = at(0, 18)
    user = await h.make_user(STUDENT, mode="child")
    for n in range(12):
        await add_item(h.services, user.id, h.clock() - timedelta(days=1, minutes=n))
    h.llm.push_text("Bonsoir !")
    texts = await say(h, STUDENT, "Bonsoir")
    assert texts == [f"Bonsoir !\n\n📝 {ROUND_SIZE} questions à revoir — écris REVISION"]  # not 12
