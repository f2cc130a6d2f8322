"""A flag nobody acknowledged is e-mailed again to the admins after SAFETY_ESCALATE_AFTER_S, once:
through the registered periodic job, the real SMTP server (aiosmtpd), the real webhook and the
dashboard's acknowledgement, on both backends."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import select

from bot.safety import escalate_open_flags
from bot.storage.models import SafetyFlag
from tests.support.admin import add_flag, logged_in, make_cohort, make_operator
from tests.support.harness import Harness
from tests.support.safety import DISTRESS, IVORIAN, flags

FOUR_HOURS_S = 14400
# A name the sender chose, which a mail client would make a link of.
HOSTILE_NAME = "Awa https://evil.example/x"


async def a_school(h: Harness) -> int:
    """A child of « 3e B » with its teacher and an admin; returns the child's id."""
    child = await h.make_user(IVORIAN, mode="child", display_name=HOSTILE_NAME)
    cohort = await make_cohort(h, "3e B", [child])
    await make_operator(h, "prof@ecole.test", role="teacher", cohorts=[cohort])
    await make_operator(h, "direction@ecole.test")
    return child.id


def to_whom(received: list[Any]) -> list[str]:
    return sorted(r.rcpt_tos[0] for r in received)


async def test_a_flag_left_open_is_sent_again_to_the_admins_once(make_harness: Any, smtp_server: Any) -> None:
    smtp = smtp_server()
    h: Harness = await make_harness(**smtp.env(SAFETY_ALERT_EMAILS="veille@ong.test"))
    child_id = await a_school(h)
    await h.inbound(IVORIAN, DISTRESS)
    await h.settle()
    assert to_whom(smtp.received) == ["direction@ecole.test", "prof@ecole.test", "veille@ong.test"]
    first = len(smtp.received)
    await h.run_jobs("safety_escalation")
    h.clock.advance(seconds=FOUR_HOURS_S - 60)
    await h.run_jobs("safety_escalation")
    assert len(smtp.received) == first  # not before SAFETY_ESCALATE_AFTER_S
    h.clock.advance(seconds=60)
    await h.run_jobs("safety_escalation")
    reminders = smtp.received[first:]
    assert to_whom(reminders) == ["direction@ecole.test", "veille@ong.test"]  # the teacher was told
    link = f"{h.settings.public_base_url}/admin/students/{child_id}"
    for mail in reminders:
        assert "rappel" in mail.message["Subject"].lower() and "4 heures" in mail.message["Subject"]
        text = mail.message.get_body(("plain",)).get_content()
        assert "RAPPEL : cette alerte est ouverte depuis 4 heures" in text, text
        assert "REMINDER: this alert has been open for 4 hours" in text
        assert "pensées de se faire du mal ou de mourir" in text and "thoughts of self-harm" in text
        assert link in text and f"l'élève n° {child_id} (classe 3e B)" in text
        assert "en finir" not in text and "evil" not in text and "Awa" not in text  # nothing the sender wrote
    [flag] = await flags(h)
    assert flag.escalated_at == h.clock()
    h.clock.advance(hours=8)
    await h.run_jobs("safety_escalation")
    assert len(smtp.received) == first + 2  # once per flag


async def test_an_acknowledged_flag_is_not_sent_again(make_harness: Any, smtp_server: Any) -> None:
    smtp = smtp_server()
    h: Harness = await make_harness(**smtp.env())
    child_id = await a_school(h)
    await h.inbound(IVORIAN, DISTRESS)
    await h.settle()
    [flag] = await flags(h)
    teacher = await logged_in(h, "prof@ecole.test")
    try:
        form = {"csrf_token": await teacher.csrf()}
        status, _, _ = await teacher.post(f"/admin/flags/{flag.id}/acknowledge", form)
        assert status == 303
    finally:
        await teacher.close()
    sent = len(smtp.received)
    h.clock.advance(seconds=FOUR_HOURS_S + 1)
    await h.run_jobs("safety_escalation")
    assert len(smtp.received) == sent
    [flag] = await flags(h)
    assert flag.acknowledged_at is not None and flag.escalated_at is None and flag.user_id == child_id


async def test_two_workers_at_once_send_each_reminder_once(make_harness: Any, smtp_server: Any) -> None:
    smtp = smtp_server()
    first: Harness = await make_harness(**smtp.env(SAFETY_ESCALATE_AFTER_S="600"))
    second: Harness = await make_harness(**smtp.env(SAFETY_ESCALATE_AFTER_S="600"))  # another process
    child_id = await a_school(first)
    others = [await first.make_user(f"+22507000002{n:02d}", mode="child") for n in range(3)]
    ids = [await add_flag(first, user.id, "je veux plus vivre") for user in others]
    ids.append(await add_flag(first, child_id, "il me frappe", category="abuse_home"))
    first.clock.advance(seconds=600)
    second.clock.now = first.clock.now
    runs = [escalate_open_flags(h.services, h.clock()) for h in (first, second, first, second)]
    assert sum(await asyncio.gather(*runs)) <= len(ids)  # a worker's own tick may take some
    assert len(smtp.received) == len(ids)  # one admin, one reminder per flag
    subjects = [r.message["Subject"] for r in smtp.received]
    assert all("15 minutes" in s for s in subjects), subjects  # raised 5 minutes before, 10 more since
    async with first.services.sessions() as db:
        escalated = list(await db.scalars(select(SafetyFlag.escalated_at).order_by(SafetyFlag.id)))
    assert escalated == [first.clock()] * len(ids)


async def test_zero_means_never(make_harness: Any, smtp_server: Any) -> None:
    smtp = smtp_server()
    h: Harness = await make_harness(**smtp.env(SAFETY_ESCALATE_AFTER_S="0"))
    child_id = await a_school(h)
    await add_flag(h, child_id, "je veux plus vivre")
    h.clock.advance(days=30)
    await h.run_jobs("safety_escalation")
    assert smtp.received == [] and [f.escalated_at for f in await flags(h)] == [None]
