"""A parent gets at most one message a day about their children's tasks: one digest, not one SMS per
task and again at the due time. Through the registered jobs, checked against the Twilio stand-in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from bot import clock
from bot.assistant import tasks
from bot.channel import formatting
from bot.storage.models import ParentLink, ScheduledSend, User
from tests.support.harness import SMS_FROM

STUDENT = "+2250700000001"
SISTER = "+2250700000004"
PARENT = "+2250700000009"
TUESDAY = datetime(2026, 3, 10, 6, 0, tzinfo=UTC)  # 06:00 in Abidjan; PARENT_DIGEST_HOUR=7 by default


async def family(h: Any, status: str = "confirmed", **parent: Any) -> tuple[User, User]:
    h.clock.now = TUESDAY
    student = await h.make_user(STUDENT, display_name="Awa")
    # As invited by PARENT +…: a number reached by SMS, outside any WhatsApp window.
    fields: dict[str, Any] = {"last_channel": "sms", "last_whatsapp_inbound_at": None}
    mum = await h.make_user(PARENT, mode="pro", **(fields | parent))
    async with h.services.sessions() as db:
        db.add(ParentLink(student_id=student.id, parent_id=mum.id, status=status, confirmed_at=h.clock()))
        await db.commit()
    return student, mum


async def add(h: Any, user: User, title: str, day: str, at: str) -> int:
    task, _ = await tasks.create(h.services, user.id, title=title, due_date=day, due_time=at)
    return task.id


async def run_until(h: Any, end: datetime, step: timedelta = timedelta(minutes=15)) -> None:
    """Every registered job (reminders, digests, summaries), tick after tick until `end`."""
    while h.clock.now < end:
        h.clock.now = min(h.clock.now + step, end)
        await h.run_jobs()
    await h.twilio.idle()


async def test_one_digest_a_day_for_several_tasks(harness: Any) -> None:
    h = harness
    student, _ = await family(h)
    done_1 = await add(h, student, "Rendre le devoir", "2026-03-10", "10:00")
    done_2 = await add(h, student, "Réviser les fractions", "2026-03-10", "13:00")
    await add(h, student, "Exposé", "2026-03-10", "18:00")
    await add(h, student, "Dictée", "2026-03-11", "08:00")

    await run_until(h, TUESDAY + timedelta(minutes=45))  # 06:45: not yet
    assert h.twilio.to(PARENT) == []
    await run_until(h, TUESDAY + timedelta(hours=17, minutes=59))  # the whole day, every reminder
    [digest] = h.twilio.to(PARENT)
    assert digest["From"] == SMS_FROM
    body = digest["Body"]
    assert "Awa" in body and "10:00 Rendre le devoir" in body and "13:00 Réviser les fractions" in body
    assert "18:00 Exposé" in body
    assert "Dict" not in body  # tomorrow's: in tomorrow's digest
    # The footer says the least the rules need; one segment for a usual day.
    assert body.endswith(("STOP pour arrêter", "STOP pour arreter")) and formatting.sms_cost(body) == 1, body
    # The student got every reminder (lead and due) of the day meanwhile.
    assert len(h.twilio.to(f"whatsapp:{STUDENT}")) == 6

    async with h.services.sessions() as db:
        for task_id in (done_1, done_2):
            await tasks.close(db, student.id, task_id, h.clock())
        await db.commit()
    await run_until(h, TUESDAY + timedelta(days=1, hours=6))  # Wednesday 12:00
    first, second = h.twilio.to(PARENT)
    assert first is digest
    text = second["Body"]
    assert "08:00 Dict" in text and "Expos" in text and "pas encore fait" in text
    assert "Rendre le devoir" not in text and "fractions" not in text  # done


async def test_one_digest_for_all_children(harness: Any) -> None:
    h = harness
    student, mum = await family(h)
    sister = await h.make_user(SISTER, display_name="Mariam")
    async with h.services.sessions() as db:
        db.add(ParentLink(student_id=sister.id, parent_id=mum.id, status="confirmed", confirmed_at=h.clock()))
        await db.commit()
    await add(h, student, "Maths", "2026-03-10", "15:00")
    await add(h, sister, "Lecture", "2026-03-10", "16:00")
    await run_until(h, TUESDAY + timedelta(hours=12))
    [digest] = h.twilio.to(PARENT)
    assert "Awa" in digest["Body"] and "Maths" in digest["Body"]
    assert "Mariam" in digest["Body"] and "Lecture" in digest["Body"]


async def test_nothing_due_means_no_digest(harness: Any) -> None:
    h = harness
    student, _ = await family(h)
    await add(h, student, "Dans trois jours", "2026-03-13", "10:00")
    await run_until(h, TUESDAY + timedelta(hours=16), step=timedelta(hours=1))
    assert h.twilio.to(PARENT) == []


@pytest.mark.parametrize(
    ("status", "opted_out"), [("pending", False), ("refused", False), ("confirmed", True)]
)
async def test_unconfirmed_or_opted_out_parent_gets_no_digest(
    harness: Any, status: str, opted_out: bool
) -> None:
    h = harness
    student, _ = await family(h, status=status, opted_out=opted_out)
    await add(h, student, "Maths", "2026-03-10", "15:00")
    await run_until(h, TUESDAY + timedelta(hours=16), step=timedelta(hours=1))
    assert h.twilio.to(PARENT) == []
    assert len(h.twilio.to(f"whatsapp:{STUDENT}")) == 2  # the student's own reminders still go


async def test_a_failed_digest_is_retried_and_sent_once(make_harness: Any) -> None:
    h = await make_harness(TWILIO_SEND_ATTEMPTS="1", SCHEDULED_SEND_BACKOFF_S="600")
    student, _ = await family(h)
    await add(h, student, "Maths", "2026-03-10", "09:30")
    h.clock.now = TUESDAY + timedelta(hours=1)
    h.twilio.fail_next("500")
    await tasks.send_parent_digests(h.services, h.clock())
    assert h.twilio.to(PARENT) == []
    await run_until(h, TUESDAY + timedelta(hours=14), step=timedelta(minutes=5))
    [digest] = h.twilio.to(PARENT)
    assert "Maths" in digest["Body"]
    async with h.services.sessions() as db:
        row = await db.scalar(select(ScheduledSend).where(ScheduledSend.kind == "parent_digest"))
    assert row is not None and row.status == "sent" and row.attempts == 2


def test_digest_day_starts_at_the_digest_hour() -> None:
    tz = clock.zone("Africa/Lagos")  # UTC+1
    at_7 = datetime(2026, 3, 10, 6, 0, tzinfo=UTC)
    assert tasks.digest_slot(at_7, 7, tz) == at_7
    assert tasks.digest_slot(at_7 - timedelta(minutes=1), 7, tz) == at_7 - timedelta(days=1)
