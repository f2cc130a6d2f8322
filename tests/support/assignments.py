"""A class with its bank of questions and three students (on WhatsApp inside the window, by SMS, on
WhatsApp silent for three days) for the assignments' tests, and the console's `cohorts assign`."""

from __future__ import annotations

from datetime import UTC, date, timedelta
from typing import Any

from sqlalchemy import func, select

from bot.learning import skill_key
from bot.school.assignments import NOTICE
from bot.storage.models import AssignmentWork, ClassItem, Cohort, CohortMember, ScheduledSend
from tests.support.console import console
from tests.support.harness import Harness

INSIDE, BY_SMS, OUTSIDE = "+2250700000031", "+2250700000032", "+2250700000033"
TEMPLATE = "HX" + "a1" * 16
APPROVED = {"friendly_name": "deblo_devoir", "language": "fr",
            "variables": {"1": "fractions", "2": "5", "3": "lun. 9 mars"},
            "types": {"twilio/quick-reply": {
                "body": "📚 Devoir : {{2}} questions sur {{1}}, avant le {{3}}.",
                "actions": [{"type": "QUICK_REPLY", "title": "Commencer", "id": "devoir:1"}]}}}
BANK = [("Que vaut 1/2 + 1/4 ?", ["3/4", "2/6", "1/8"], 0),
        ("1/3 est plus grand que 1/2.", ["Vrai", "Faux"], 1)]


async def a_class(h: Harness, name: str = "6e A") -> tuple[int, dict[str, int]]:
    """The class, its bank on « Les fractions » and three students: on WhatsApp inside the window,
    by SMS, and on WhatsApp silent for three days."""
    old = h.clock() - timedelta(days=3)
    users = {INSIDE: await h.make_user(INSIDE, display_name="Awa Koné"),
             BY_SMS: await h.make_user(BY_SMS, display_name="Yao Koné", last_channel="sms",
                                       last_whatsapp_inbound_at=None),
             OUTSIDE: await h.make_user(OUTSIDE, display_name="Ama Bamba", last_inbound_at=old,
                                        last_whatsapp_inbound_at=old)}
    async with h.services.sessions() as db:
        cohort = Cohort(name=name, created_at=h.clock())
        db.add(cohort)
        await db.flush()
        for user in users.values():
            db.add(CohortMember(cohort_id=cohort.id, user_id=user.id, joined_at=h.clock()))
        for n, (question, options, right) in enumerate(BANK):
            db.add(ClassItem(cohort_id=cohort.id, subject="Mathématiques", skill=skill_key("Les fractions"),
                             skill_label="Les fractions", quiz_type="mcq" if len(options) > 2 else "tf",
                             question=question, options=options, correct_index=right,
                             explanation=f"Explication {n}", fingerprint=f"f{n}"))
        await db.commit()
        return cohort.id, {phone: u.id for phone, u in users.items()}


async def works(h: Harness) -> dict[int, AssignmentWork]:
    async with h.services.sessions() as db:
        return {w.user_id: w for w in await db.scalars(select(AssignmentWork))}


def due_day() -> date:
    return date.today() + timedelta(days=5)


async def at_the_notices_slot(h: Harness) -> None:
    """Moves the harness's clock on to the notices' slot when it is later: the console plans them on
    the machine's clock, and a notice planned at night waits for the day (08:00 local)."""
    async with h.services.sessions() as db:
        slot = await db.scalar(select(func.max(ScheduledSend.slot_at)).where(ScheduledSend.kind == NOTICE))
    assert slot is not None, "no notice planned"
    slot = slot.replace(tzinfo=UTC) if slot.tzinfo is None else slot
    h.clock.now = max(h.clock.now, slot)


async def assign(h: Harness, *extra: str) -> Any:
    run = await console(h, "cohorts", "assign", "6e A", "--skill", "Les fractions", "--questions", "2",
                        "--due", due_day().isoformat(), *extra)
    assert run.code == 0, run.err
    h.clock.advance(minutes=1)  # the command ran on the machine's clock, a moment after the harness's
    return run
