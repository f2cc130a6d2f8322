"""A class as its teacher sees it (roster, at risk, skills to work on) and the teachers' weekly
e-mail through a real SMTP server (aiosmtpd), once a week per teacher."""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from bot.config_groups import Learning
from bot.learning import bkt_update, record_checked
from bot.learning.progress import latest_summary_slot
from bot.school import at_risk, bkt_before, find_cohort, roster, send_teacher_summaries, skills_to_work_on
from bot.storage.models import Cohort, CohortMember, Operator, OperatorCohort
from tests.support.harness import Harness
from tests.support.ports import free_port

ACTIVE, QUIET, NEVER, FALLING = "+2250701020301", "+2250701020302", "+2250701020303", "+2250701020304"


def test_bkt_before_undoes_bkt_update() -> None:
    learning = Learning()
    start, p = 0.2, 0.2
    answers = [True, True, False, True, False, False, True]
    for correct in answers:
        p = bkt_update(p, correct, learning)
    for correct in reversed(answers):
        p = bkt_before(p, correct, learning)
    assert p == pytest.approx(start, abs=1e-9)


async def answer(h: Harness, phone: str, topic: str, results: list[bool], when: datetime) -> None:
    user = await h.user(phone)
    assert user is not None
    async with h.services.sessions() as db:
        for n, correct in enumerate(results):
            await record_checked(db, h.settings.learning, user_id=user.id, conversation_id=None, item=None,
                                 subject="Mathématiques", topic=topic, correct=correct, seconds=None,
                                 source="quiz", now=when + timedelta(minutes=n))
        await db.commit()


async def a_class(h: Harness) -> datetime:
    """Four students of « 6e A »: one active and doing well, one quiet for 9 days, one who never
    wrote, one active whose fractions fell this week. Returns now."""
    now = h.clock()
    await h.make_user(ACTIVE, display_name="Awa", school_level="6e")
    await h.make_user(QUIET, display_name="Yao", last_inbound_at=now - timedelta(days=9))
    await h.make_user(NEVER, last_inbound_at=None)
    await h.make_user(FALLING, display_name="Marc")
    await answer(h, ACTIVE, "Fractions", [True, True, True], now - timedelta(days=2))
    await answer(h, FALLING, "Fractions", [True, True, True, True], now - timedelta(days=12))
    await answer(h, FALLING, "Fractions", [False, False, False], now - timedelta(days=1))
    async with h.services.sessions() as db:
        cohort = Cohort(name="6e A", created_at=now - timedelta(days=30))
        db.add(cohort)
        await db.flush()
        for phone in (ACTIVE, QUIET, NEVER, FALLING):
            user = await h.user(phone)
            assert user is not None
            db.add(CohortMember(cohort_id=cohort.id, user_id=user.id, joined_at=now))
        await db.commit()
    return now


async def test_the_class_seen_by_its_teacher(harness: Harness) -> None:
    h = harness
    now = await a_class(h)
    async with h.services.sessions() as db:
        cohort = await find_cohort(db, "6e A")
        assert cohort is not None
        students = await roster(db, cohort.id)
        risks = await at_risk(db, cohort.id, now, h.settings.learning)
        skills = await skills_to_work_on(db, cohort.id, h.settings.learning)
    assert [(s.name, s.level) for s in students] == [("Awa", "6e"), ("Marc", None), ("Yao", None),
                                                     (None, None)]
    assert [(r.student.phone, r.quiet_days) for r in risks] == [(NEVER, -1), (QUIET, 9), (FALLING, None)]
    [fall] = risks[2].fallen
    assert fall.label == "Fractions" and fall.before - fall.now >= 0.1 and fall.before > 0.8
    [fractions] = skills
    assert (fractions.label, fractions.students, fractions.struggling) == ("Fractions", 2, 1)


async def teacher(h: Harness, email: str, now: datetime) -> None:
    async with h.services.sessions() as db:
        cohort = await find_cohort(db, "6e A")
        assert cohort is not None
        op = Operator(email=email, role="teacher", password_hash="x", created_at=now - timedelta(days=20))
        db.add(op)
        await db.flush()
        db.add(OperatorCohort(operator_id=op.id, cohort_id=cohort.id))
        await db.commit()


async def test_the_weekly_summary_mails_each_teacher_once(make_harness: Any, smtp_server: Any) -> None:
    smtp = smtp_server()
    h: Harness = await make_harness(**smtp.env(TEACHER_SUMMARY_WEEKDAY="0", TEACHER_SUMMARY_HOUR="7"))
    h.clock.now = latest_summary_slot(h.clock(), 0, 7, h.settings.default_timezone) + timedelta(minutes=5)
    now = await a_class(h)
    await teacher(h, "prof@ecole.ci", now)
    # The mail server cannot be reached: nothing is claimed, the next tick tries again.
    away = dataclasses.replace(h.services, settings=dataclasses.replace(h.settings, smtp_port=free_port()))
    assert await send_teacher_summaries(away, now) == 0
    async with h.services.sessions() as db:
        assert await db.scalar(select(Operator.last_summary_at)) is None
    await h.run_jobs("teacher_weekly_summary")
    [mail] = smtp.received
    assert mail.rcpt_tos == ["prof@ecole.ci"] and "6e A" in mail.message["Subject"]
    text = mail.message.get_body(("plain",)).get_content()
    assert "Actifs ces 7 derniers jours : 2 sur 4" in text, text
    # The week's days in the school's zone, in French (the slot is a Monday).
    assert re.search(r"\(du lun\. \d{1,2} \S+ au lun\. \d{1,2} \S+ 20\d\d\)\.", text), text
    assert "+225…0303 : n'a encore jamais écrit" in text and "Yao : aucun message depuis 9 jours" in text
    assert "Marc : maîtrise en baisse : Fractions" in text
    assert "Fractions : " in text and "1 élève(s) sur 2 à revoir" in text
    h.clock.advance(hours=1)
    await h.run_jobs("teacher_weekly_summary")
    assert len(smtp.received) == 1  # once a week
    h.clock.advance(days=7)
    await h.run_jobs("teacher_weekly_summary")
    assert len(smtp.received) == 2
