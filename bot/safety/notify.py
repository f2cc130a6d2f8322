"""E-mails about a new flag: to the teachers of the child's classes and to the operator's admins,
written so that they cannot be used as a relay from the school's own mail sender.

Anyone can write to the bot, and a new number is a guest who may be a child: what an alert carries
is chosen as if the sender were hostile.
- Teachers (OperatorCohort of the child's cohorts) get what they need to act and nothing the sender
  wrote or chose: the kind of distress, a neutral label (the student's number on the dashboard and
  their classes; the name is WhatsApp's profile name, the sender's choice), when, and the link to
  the student's page on our dashboard.
- Admins (operators of role admin, and SAFETY_ALERT_EMAILS) get the excerpt too, as the dashboard
  shows it to them, and the name: as plain text with every link defanged (`hxxp://evil[.]example`).
  No message has an HTML part, so no markup in the words makes a link either.
- At most SAFETY_ALERTS_PER_HOUR flags per sender number and hour, and SAFETY_ALERTS_PER_DAY per
  deployment and (UTC) day, are e-mailed: counters in the shared state, which hold across
  processes. Past either the flag is still raised and on the dashboard; only its e-mails are not
  sent (logged, and counted as deblo_rate_limited_total{action="safety_alert_hour|day"}).
One message per address, so that no one sees who else was told. An e-mail that SMTP refused, or
that could not go because SMTP is not configured, is logged as not sent: nobody is told it went.
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot import metrics
from bot.channel.email import EmailError, build_message, normalize_address, send_message, sender_address
from bot.render import render
from bot.safety.flags import how_long
from bot.safety.phrases import label
from bot.services import Services
from bot.storage.models import Cohort, CohortMember, Operator, OperatorCohort, SafetyFlag, User

log = logging.getLogger(__name__)

__all__ = ["Recipients", "defang", "notify", "recipients"]



HOUR_S = 3600
DAY_S = 86400
# What makes a link of text in a mail client: a scheme, or a host name (a dot between labels, the
# last one a word of two letters or more: `evil.example`, `www.x.co`, `bob@x.org`, `école.ci`), or
# an IPv4 address.
_SCHEME = re.compile(r"(?i)\b(h)tt(ps?)(?=:)|\b(f)t(ps?)(?=:)")
_HOST = re.compile(r"\b(?:[^\W_](?:[\w-]*[^\W_])?\.)+[^\W\d_][\w-]*[^\W_]\b")  # any script: IDNA
_IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")
# Direction overrides and invisible characters, which can show a link as other text.
_HIDDEN = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


@dataclass(frozen=True)
class Recipients:
    teachers: tuple[str, ...]  # without the message's words
    admins: tuple[str, ...]  # with them
    classes: tuple[str, ...] = ()  # the child's classes, for the teachers' neutral label


def defang(text: str) -> str:
    """The text with no link a mail client would make: `http://evil.example/x` becomes
    `hxxp://evil[.]example/x`. Full-width and ideographic dots count as dots (IDNA reads them so)."""
    text = _HIDDEN.sub("", unicodedata.normalize("NFKC", text)).replace("\u3002", ".")
    text = _SCHEME.sub(lambda m: f"{m[1]}xx{m[2]}" if m[1] else f"{m[3]}x{m[4]}", text)
    text = _IPV4.sub(lambda m: m[0].replace(".", "[.]"), text)
    return _HOST.sub(lambda m: m[0].replace(".", "[.]"), text)


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
    classes = (await db.scalars(select(Cohort.name).join(CohortMember, CohortMember.cohort_id == Cohort.id)
                                .where(CohortMember.user_id == user_id).order_by(Cohort.name))).all()
    return Recipients(teachers=tuple(a for a in _addresses(teachers) if a not in admin_set),
                      admins=tuple(admin_set), classes=tuple(classes))


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


def _who(student: User, classes: Sequence[str], *, words: bool) -> tuple[str, str]:
    """How the e-mail names the child, in French and English: to admins the name (defanged) and
    number; to teachers a neutral label, nothing the sender chose."""
    if words:
        name = defang(" ".join((student.display_name or "").split()))
        who = f"{name} ({student.phone})" if name and student.phone else name or student.phone or ""
        return who or f"n° {student.id}", who or f"no. {student.id}"
    where = ", ".join(classes)
    return (f"l'élève n° {student.id}" + (f" (classe {where})" if where else ""),
            f"student no. {student.id}" + (f" (class {where})" if where else ""))


def _body(services: Services, flag: SafetyFlag, student: User, classes: Sequence[str], *, words: bool,
          open_for: float | None = None) -> str:
    fr, en = label(flag.category, "fr"), label(flag.category, "en")
    who_fr, who_en = _who(student, classes, words=words)
    when = _local_time(flag.created_at, student.timezone or services.settings.default_timezone)
    link = f"{services.settings.public_base_url}/admin/students/{student.id}"
    since = ("", "") if open_for is None else (how_long(open_for, "fr"), how_long(open_for, "en"))
    return render("email/safety_alert.txt", who_fr=who_fr, who_en=who_en, when=when, link=link, fr=fr,
                  en=en, words=words, source=flag.source, excerpt=defang(flag.excerpt) if words else "",
                  open_fr=since[0], open_en=since[1])


def _sender_key(student: User) -> str:
    address = student.phone or student.external_id or f"user:{student.id}"
    return hashlib.sha256(address.encode()).hexdigest()[:32]  # no number in the shared state


async def _over_cap(services: Services, student: User) -> str | None:
    """Counts the alert against the sender's hour and the deployment's day: the cap it is past
    ("hour" or "day"), else None. Without the shared state it is sent: a child comes first."""
    safety = services.settings.safety
    try:
        if await services.state.incr(f"safety:alerts:hour:{_sender_key(student)}", HOUR_S) \
                > safety.safety_alerts_per_hour:
            return "hour"
        day = f"safety:alerts:day:{services.clock():%Y-%m-%d}"
        if await services.state.incr(day, 2 * DAY_S) > safety.safety_alerts_per_day:
            return "day"
    except Exception:
        log.warning("safety alert caps not counted (shared state away); sent", exc_info=True)
    return None


async def notify(services: Services, flag: SafetyFlag, student: User, to: Recipients, *,
                 open_for: float | None = None) -> int:
    """Sends the e-mails unless a cap is reached; returns how many the mail server accepted
    (failures logged). `open_for`: a reminder of a flag open for that many seconds, written to
    every address as to teachers: nothing the sender wrote or chose (bot.safety.escalation)."""
    if not to.teachers and not to.admins:
        log.warning("safety flag raised with nobody to e-mail (no admin, no teacher)",
                    extra={"flag_id": flag.id})
        return 0
    cap = await _over_cap(services, student)
    if cap is not None:
        metrics.RATE_LIMITED.labels(f"safety_alert_{cap}").inc()
        log.warning("safety alert not e-mailed: SAFETY_ALERTS_PER_%s reached; the flag is on the dashboard",
                    "HOUR" if cap == "hour" else "DAY", extra={"flag_id": flag.id, "cap": cap})
        return 0
    sender = sender_address(services.settings)
    subject = "Deblo : alerte sur le message d'un élève / a student's message needs attention"
    if open_for is not None:
        subject = (f"Deblo : rappel, alerte ouverte depuis {how_long(open_for, 'fr')} / reminder: "
                   f"an alert open for {how_long(open_for, 'en')}")
    sent = 0
    for address, words in [*((a, False) for a in to.teachers), *((a, open_for is None) for a in to.admins)]:
        try:
            message = build_message(from_addr=sender or None, to=[address], subject=subject, html=False,
                                    body=_body(services, flag, student, to.classes, words=words,
                                               open_for=open_for))
            await send_message(services.settings, message)
        except EmailError as exc:
            log.warning("safety alert e-mail not sent", extra={"flag_id": flag.id, "reason": str(exc)})
            continue
        sent += 1
    log.info("safety alert e-mails", extra={"flag_id": flag.id, "sent": sent,
                                            "recipients": len(to.teachers) + len(to.admins)})
    return sent
