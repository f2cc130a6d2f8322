"""SEND_MAX_AGE_S: a message queued longer than that is dropped, recorded and counted, never sent
late: a reply waiting in the outbox, a reminder for 08:00 at noon (the workers down, or Twilio
refusing every try meanwhile). Counts and statuses on the test's clock, never times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from bot import metrics
from bot.assistant.tasks import send_due_reminders
from bot.channel.outbound import send_to_user
from bot.storage.models import OutboundMessage, ScheduledSend, Task
from tests.support.harness import Harness
from tests.support.waiting import eventually

PHONE = "+2250700000081"
EIGHT = datetime(2026, 3, 10, 8, 0, tzinfo=UTC)  # 08:00 in Abidjan
OUTBOX = {"OUTBOX_POLL_S": "0.05", "OUTBOX_BACKOFF_S": "5", "OUTBOX_BACKOFF_MAX_S": "20"}


async def outbound(h: Harness) -> list[OutboundMessage]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(OutboundMessage).order_by(OutboundMessage.id))).all())


async def scheduled(h: Harness) -> list[ScheduledSend]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(ScheduledSend).order_by(ScheduledSend.id))).all())


async def task(h: Harness, user_id: int, title: str, due_at: datetime) -> None:
    async with h.services.sessions() as db:
        db.add(Task(user_id=user_id, title=title, due_at=due_at, created_at=due_at - timedelta(days=1)))
        await db.commit()


def expired(channel: str, path: str) -> float:
    value: float = metrics.SENDS_EXPIRED.labels(channel, path)._value.get()
    return value


async def test_a_reply_left_in_the_outbox_past_send_max_age_is_dropped_and_told(make_harness: Any) -> None:
    # OUTBOX_MAX_AGE_S (a day) would keep trying; SEND_MAX_AGE_S (10 min here) says it is too late.
    h = await make_harness(**OUTBOX, SEND_MAX_AGE_S="600")
    user = await h.make_user(PHONE)
    back_at = h.clock() + timedelta(minutes=15)
    h.twilio.fail_while("503", lambda: h.clock() < back_at)
    before = expired("whatsapp", "outbox")
    result = await send_to_user(h.services, user, text="Réponse qui arrive trop tard.")
    assert result.queued
    h.clock.advance(minutes=15)

    async def dropped() -> bool:
        [row] = await outbound(h)
        return row.status == "failed"

    await eventually(dropped)
    [row] = await outbound(h)
    assert (row.error_code, row.sid) == ("expired", None) and "SEND_MAX_AGE_S" in (row.last_error or "")
    assert h.twilio.sent == [] and expired("whatsapp", "outbox") - before == 1
    # Never claimed as sent: the user is told with their next message that it did not reach them.
    assert (await send_to_user(h.services, user, text="Nouveau message.")).ok
    texts = await h.texts_to(PHONE)
    assert texts[0] == "Nouveau message." and "Réponse qui arrive trop tard." in texts[1]


async def test_a_reminder_for_eight_does_not_arrive_at_noon(make_harness: Any) -> None:
    h = await make_harness()
    h.clock.now = EIGHT - timedelta(hours=2)
    user = await h.make_user(PHONE)
    await task(h, user.id, "Réviser les fractions", EIGHT)
    await task(h, user.id, "Rendre le devoir", EIGHT + timedelta(hours=3, minutes=30))
    before = expired("whatsapp", "scheduled")
    # The workers were down from before 08:00 until noon: the 08:00 reminder is planned at noon,
    # and dropped; the 11:30 one is only 30 min late and goes.
    h.clock.now = EIGHT + timedelta(hours=4)
    assert await send_due_reminders(h.services, h.clock()) == 1
    await h.twilio.idle()
    assert len(h.twilio.sent) == 1 and "Rendre le devoir" in h.twilio.bodies()[0]
    rows = {r.key: r for r in await scheduled(h)}
    late = next(r for k, r in rows.items() if k.endswith(":due") and r.status != "sent")
    assert late.status == "expired" and "SEND_MAX_AGE_S" in (late.last_error or "")
    assert expired("whatsapp", "scheduled") - before == 1
    assert await send_due_reminders(h.services, h.clock()) == 0  # and never sent later
    assert len(h.twilio.sent) == 1


async def test_a_reminder_refused_all_morning_is_dropped_not_sent_at_noon(make_harness: Any) -> None:
    h = await make_harness(SCHEDULED_SEND_BACKOFF_S="600", SCHEDULED_SEND_ATTEMPTS="10")
    h.clock.now = EIGHT - timedelta(hours=1)
    user = await h.make_user(PHONE)
    await task(h, user.id, "Réviser les fractions", EIGHT)
    h.twilio.fail_while("429", lambda: h.clock() < EIGHT + timedelta(hours=4))
    h.clock.now = EIGHT
    assert await send_due_reminders(h.services, h.clock()) == 0  # 20429: retried later
    [row] = await scheduled(h)
    assert row.status == "pending" and row.attempts == 1
    h.clock.now = EIGHT + timedelta(minutes=10)
    assert await send_due_reminders(h.services, h.clock()) == 0  # still refused: retried again
    h.clock.now = EIGHT + timedelta(hours=4)  # Twilio takes messages again, four hours late
    assert await send_due_reminders(h.services, h.clock()) == 0
    [row] = await scheduled(h)
    assert row.status == "expired" and h.twilio.sent == []
