"""E-mails about a new flag: to the teachers of the child's classes and to the operator's admins.

Teachers (OperatorCohort of the child's cohorts) get what they need to act, never the child's
words: the kind of distress, who, when, and the dashboard's link. Admins (operators of role admin,
and SAFETY_ALERT_EMAILS) get the excerpt too, as the dashboard shows it to them. One message per
address, so that no one sees who else was told. An e-mail that SMTP refused, or that could not go
because SMTP is not configured, is logged as not sent: nobody is told it went.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel.email import EmailError, build_message, normalize_address, send_message, sender_address
from bot.render import render
from bot.services import Services
from bot.storage.models import CohortMember, Operator, OperatorCohort, SafetyFlag, User

log = logging.getLogger(__name__)

__all__ = ["Recipients", "notify", "recipients"]

_CATEGORY = {
    "self_harm": ("pensées de se faire du mal ou de mourir", "thoughts of self-harm or of dying"),
    "abuse": ("maltraitance ou abus (peut-être sexuel)", "abuse (possibly sexual)"),
    "violence": ("violence subie", "violence against them"),
}


@dataclass(frozen=True)
class Recipients:
    teachers: tuple[str, ...]  # without the message's words
    admins: tuple[str, ...]  # with them


async def recipients(db: AsyncSession, services: Services, user_id: int) -> Recipients:
    """The teachers of the child's classes and the admins; an admin who also teaches is an admin."""
    teachers = (await db.scalars(
        select(Operator.email).join(OperatorCohort, OperatorCohort.operator_id == Operator.id)
        .join(CohortMember, CohortMember.cohort_id == OperatorCohort.cohort_id)
        .where(CohortMember.user_id == user_id, Operator.role == "teacher").order_by(Operator.id)
    )).all()
    admins = (await db.scalars(select(Operator.email).where(Operator.role == "admin")
                               .order_by(Operator.id))).all()
    admin_set = _addresses([*admins, *services.settings.safety.safety_alert_emails])
    return Recipients(teachers=tuple(a for a in _addresses(teachers) if a not in admin_set),
                      admins=tuple(admin_set))


def _addresses(raw: Sequence[str]) -> list[str]:
    seen: list[str] = []
    for item in raw:
        address = normalize_address(item)
        if address is None:
            log.warning("safety alert: not an e-mail address, skipped", extra={"address": item[:80]})
        elif address.lower() not in (s.lower() for s in seen):
            seen.append(address)
    return seen


def _local_time(when: datetime, zone: str) -> str:
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        tz, zone = ZoneInfo("UTC"), "UTC"
    aware = when if when.tzinfo else when.replace(tzinfo=ZoneInfo("UTC"))
    return f"{aware.astimezone(tz):%Y-%m-%d %H:%M} ({zone})"


def _body(services: Services, flag: SafetyFlag, student: User, *, words: bool) -> str:
    fr, en = _CATEGORY.get(flag.category, (flag.category, flag.category))
    who = student.display_name or student.phone or f"#{student.id}"
    when = _local_time(flag.created_at, student.timezone or services.settings.default_timezone)
    link = f"{services.settings.public_base_url}/admin/students/{student.id}"
    return render("email/safety_alert.txt", who=who, when=when, link=link, fr=fr, en=en, words=words,
                  source=flag.source, excerpt=flag.excerpt)


async def notify(services: Services, flag: SafetyFlag, student: User, to: Recipients) -> int:
    """Sends the e-mails; returns how many the mail server accepted (failures logged)."""
    sender = sender_address(services.settings)
    subject = "Deblo : alerte sur le message d'un élève / a student's message needs attention"
    sent = 0
    for address, words in [*((a, False) for a in to.teachers), *((a, True) for a in to.admins)]:
        try:
            message = build_message(from_addr=sender or None, to=[address], subject=subject,
                                    body=_body(services, flag, student, words=words))
            await send_message(services.settings, message)
        except EmailError as exc:
            log.warning("safety alert e-mail not sent", extra={"flag_id": flag.id, "reason": str(exc)})
            continue
        sent += 1
    if not to.teachers and not to.admins:
        log.warning("safety flag raised with nobody to e-mail (no admin, no teacher)",
                    extra={"flag_id": flag.id})
    log.info("safety alert e-mails", extra={"flag_id": flag.id, "sent": sent,
                                            "recipients": len(to.teachers) + len(to.admins)})
    return sent
