"""Practice nudges: to a student with items due, quiet for NUDGE_AFTER_S, inside WhatsApp's 24 h
window, in their daytime, at most once a local day, never after STOP or REVISION NON; planned once
across processes."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from bot.learning import send_review_nudges
from bot.learning.nudges import plan_nudges
from bot.storage.models import ScheduledSend, User
from tests.support.learner import add_item, wrote
from tests.support.pedagogy import STUDENT, say

NOW = datetime(2026, 3, 5, 10, 0, tzinfo=UTC)  # 10:00 in Abidjan (UTC)
OTHER = "+2250700000003"


async def _student(h: Any, phone: str = STUDENT, *, wrote: timedelta = timedelta(hours=5), due: int = 2,
                   **fields: Any) -> User:
    """A student who last wrote on WhatsApp `wrote` ago, with `due` items due."""
    h.clock.now = NOW
    values: dict[str, Any] = {"last_inbound_at": NOW - wrote, "last_whatsapp_inbound_at": NOW - wrote}
    values.update(fields)
    user = await h.make_user(phone, **values)
    for n in range(due):
        await add_item(h.services, user.id, NOW - timedelta(days=1, hours=n))
    await add_item(h.services, user.id, NOW + timedelta(days=2), last_correct=True)  # not due
    return user


async def test_a_nudge_at_most_once_a_day(harness: Any) -> None:
    h = harness
    await _student(h)
    assert await send_review_nudges(h.services, h.clock()) == 1
    [nudge] = h.twilio.to(f"whatsapp:{STUDENT}")
    shown = h.twilio.shown(nudge)  # a quick-reply content: its body, and the buttons under it
    assert "2 questions à revoir — écris REVISION" in shown and "REVISION NON" in shown
    for hours in (1, 4, 9):  # the same day: nothing more, however often the job runs
        h.clock.now = NOW + timedelta(hours=hours)
        assert await send_review_nudges(h.services, h.clock()) == 0
    # The next day, having written again early in the morning: one more.
    await wrote(h, STUDENT, NOW + timedelta(hours=18))  # 04:00
    h.clock.now = NOW + timedelta(days=1)
    await h.run_jobs("review_nudges")  # the registered job
    h.clock.now = NOW + timedelta(days=1, hours=2)
    await h.run_jobs("review_nudges")
    assert len(h.twilio.to(f"whatsapp:{STUDENT}")) == 2
    assert all(m["To"].startswith("whatsapp:") for m in h.twilio.sent)  # never by SMS


async def test_only_in_the_students_daytime(harness: Any) -> None:
    h = harness
    # Lagos is UTC+1: 06:30 UTC is 07:30 there, too early; 07:00 UTC is 08:00, fine.
    await _student(h, timezone="Africa/Lagos", wrote=timedelta(hours=8))  # at 02:00 UTC
    h.clock.now = NOW.replace(hour=6, minute=30)
    assert await send_review_nudges(h.services, h.clock()) == 0
    h.clock.now = NOW.replace(hour=7)
    assert await send_review_nudges(h.services, h.clock()) == 1
    # 19:00 UTC is 20:00 in Lagos: too late for anyone quiet since.
    await _student(h, OTHER, timezone="Africa/Lagos", wrote=timedelta(hours=-4))  # wrote at 14:00
    h.clock.now = NOW.replace(hour=19)
    assert await send_review_nudges(h.services, h.clock()) == 0
    assert h.twilio.to(f"whatsapp:{OTHER}") == []


async def test_never_outside_the_window_nor_to_a_student_who_wrote_lately(harness: Any) -> None:
    h = harness
    await _student(h, wrote=timedelta(hours=25))  # the 24 h window closed: it would need a template
    await _student(h, OTHER, wrote=timedelta(hours=1))  # wrote within NUDGE_AFTER_S (4 h)
    sms_only = "+2250700000004"
    await _student(h, sms_only, last_channel="sms", last_whatsapp_inbound_at=None)
    assert await send_review_nudges(h.services, h.clock()) == 0
    # Planned inside the window, delivered once it closed: checked again, nothing sent.
    h.clock.now = NOW + timedelta(hours=3)  # OTHER has been quiet 4 h now
    assert await plan_nudges(h.services, h.clock()) == 1
    h.clock.now = NOW + timedelta(hours=3 + 21)  # the next morning, 25 h after OTHER wrote
    assert await send_review_nudges(h.services, h.clock()) == 0
    assert h.twilio.sent == []  # no WhatsApp, no template, no SMS
    async with h.services.sessions() as db:
        assert [s.status for s in await db.scalars(select(ScheduledSend))] == ["skipped"]


async def test_none_after_stop_nor_with_nudges_off_nor_without_items_due(harness: Any) -> None:
    h = harness
    await _student(h, review_nudges=False)  # REVISION NON
    await _student(h, "+2250700000004", due=0)
    stopping = await _student(h, OTHER)
    h.clock.now = NOW - timedelta(hours=4, minutes=30)
    await say(h, OTHER, "STOP")  # through the real path: opted out
    h.clock.now = NOW
    await wrote(h, OTHER, NOW - timedelta(hours=4, minutes=30))
    user = await h.user(OTHER)
    assert user is not None and user.opted_out and stopping.id == user.id
    sent = len(h.twilio.sent)
    assert await send_review_nudges(h.services, h.clock()) == 0
    assert len(h.twilio.sent) == sent


async def test_in_english(harness: Any) -> None:
    h = harness
    await _student(h, language="en", due=1)
    assert await send_review_nudges(h.services, h.clock()) == 1
    [nudge] = h.twilio.to(f"whatsapp:{STUDENT}")
    shown = h.twilio.shown(nudge)
    assert "1 question to review — send REVIEW" in shown and "REVIEW OFF" in shown
    actions = nudge["Rendered"]["twilio/quick-reply"]["actions"]
    assert [(a["title"], a["id"]) for a in actions] == [("Review", "revise:1"), ("Later", "revise:2")]


async def test_once_across_two_planners(make_harness: Any) -> None:
    first = await make_harness()
    second = await make_harness()  # another process on the same database
    await _student(first)
    second.clock.now = first.clock.now
    runs = [send_review_nudges(h.services, h.clock()) for h in (first, second, first, second)]
    assert sum(await asyncio.gather(*runs)) == 1
    sent = first.twilio.to(f"whatsapp:{STUDENT}") + second.twilio.to(f"whatsapp:{STUDENT}")
    assert len(sent) == 1
    async with first.services.sessions() as db:
        rows = list(await db.scalars(select(ScheduledSend)))
    assert [(r.kind, r.status, r.attempts) for r in rows] == [("review_nudge", "sent", 1)]
