"""A checked class list written in one transaction: each row's number enrolled as a student (as
`users set-mode PHONE child`, signup credits once through the ledger), its name and level set, the
student put in the class, and the parent linked as confirmed by the school (a confirmed link makes
a parent, as the parent's own OUI does). Then each newly linked parent gets one SMS naming the
school and the children, and how to stop; `ParentLink.invited_at` records that Twilio took it.

Importing the same file again changes nothing: a student already enrolled is not enrolled again,
a name or level already set is not written, a link already confirmed is left as it is (no SMS). A
link the parent refused (NON) or stopped is not forced: it is reported.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot import accounts
from bot.billing import credits
from bot.channel.keywords import stop_line
from bot.channel.locale import default_locale, locale_for
from bot.school.roster_file import RosterRow
from bot.school.sheets import problem_at
from bot.services import Services
from bot.storage.models import CohortMember, ParentLink, User
from bot.texts import fr_en

__all__ = ["ImportReport", "ParentNotice", "SentNotice", "enrol_roster", "linked_text", "make_parent",
           "notify_parents"]

log = logging.getLogger("bot.school")


@dataclass
class ParentNotice:
    """The one SMS a parent newly linked by this import gets."""

    phone: str
    language: str
    children: list[str] = field(default_factory=list)  # as named in the file
    link_ids: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class SentNotice:
    phone: str
    sent: bool  # Twilio accepted it
    reason: str | None


@dataclass
class ImportReport:
    rows: int = 0
    created: int = 0  # numbers that never wrote, now students
    enrolled: int = 0  # made students (created or mode changed)
    credited: int = 0  # signup credits granted now
    joined: int = 0  # put in the class
    named: int = 0
    levelled: int = 0
    linked: int = 0  # parent links confirmed by this import
    consented: int = 0  # the school's consent recorded for a student (CONSENT_MODE=school)
    not_linked: list[str] = field(default_factory=list)  # « line 4: +225…: refused the follow-up »
    notices: dict[str, ParentNotice] = field(default_factory=dict)  # by the parent's number

    @property
    def changed(self) -> bool:
        return bool(self.enrolled or self.joined or self.named or self.levelled or self.linked
                    or self.consented)


async def make_parent(db: AsyncSession, user: User, signup_credits: int) -> None:
    """What a confirmed link makes of its parent, whoever confirmed it: role "parent" (a pro keeps
    its profile), mode "child", no profile menu and no welcome again, the signup credits once. The
    parent was welcomed by what made them one (the reply to their OUI, or the school's SMS): a
    number that never wrote is not "new" any more, so its next question is answered, not greeted
    as a stranger's after it already used OUI, ENFANTS or AIDE."""
    if user.role != "pro":
        user.role = "parent"
    if (user.mode or "guest") == "guest":
        user.mode = "child"
    user.onboarding_step = None
    await db.flush()
    if signup_credits > 0:
        await credits.apply(db, user.id, signup_credits, "signup", ref=f"signup:{user.id}")


async def _student(db: AsyncSession, services: Services, row: RosterRow, now: datetime,
                   report: ImportReport) -> User:
    settings = services.settings
    user = await accounts.find_user(db, row.phone)
    if user is None or user.mode != "child":
        place = locale_for(row.phone, default_locale(settings)).columns()
        user, created, granted = await accounts.enrol(db, row.phone, "child", settings.signup_credits, now,
                                                      place)
        report.enrolled += 1
        report.created += int(created)
        report.credited += int(granted is not None)
    if row.name and user.display_name != row.name:
        user.display_name = row.name
        report.named += 1
    if row.level and user.school_level != row.level:
        # As `users set-level`: the class menu is not offered any more.
        user.school_level, user.level_asked_at = row.level, user.level_asked_at or now
        report.levelled += 1
    return user


async def _parent(db: AsyncSession, services: Services, phone: str, student: User, now: datetime) -> User:
    parent = await accounts.find_user(db, phone)
    if parent is None:
        # As a parent invited by PARENT +225…: a new number ("new": welcomed when they first write),
        # its country's time zone, the student's language, which the family is likely to share.
        zone = locale_for(phone, default_locale(services.settings)).timezone
        parent = User(phone=phone, role="parent", mode="guest", onboarding_step="new",
                      language=student.language or "fr", timezone=zone, last_channel="sms", created_at=now,
                      opted_out=False, email_verified=False, credit_balance=0, delivery_failures=0)
        db.add(parent)
        await db.flush()
    return parent


async def _link(db: AsyncSession, services: Services, row: RosterRow, student: User, now: datetime,
                report: ImportReport) -> None:
    assert row.parent_phone is not None
    lang = services.settings.default_language  # the report is the operator's
    parent = await _parent(db, services, row.parent_phone, student, now)
    link = await db.scalar(select(ParentLink).where(ParentLink.student_id == student.id,
                                                    ParentLink.parent_id == parent.id))
    if link is not None and link.status == "confirmed":
        return
    if link is not None and link.status != "pending":
        did = fr_en(lang, "a refusé" if link.status == "refused" else "a arrêté", link.status)
        report.not_linked.append(problem_at(
            lang, row.line, f"{row.parent_phone} {did} le suivi de {row.phone} : pas relié de nouveau",
            f"{row.parent_phone} {did} the follow-up of {row.phone} earlier; not linked again"))
        return
    if link is None:
        link = ParentLink(student_id=student.id, parent_id=parent.id, created_at=now)
        db.add(link)
    # A pending request (PARENT +225…) is confirmed by the school: its code is void.
    link.status, link.confirmed_at, link.code, link.code_expires_at = "confirmed", now, None, None
    await make_parent(db, parent, services.settings.signup_credits)
    await db.flush()
    report.linked += 1
    if parent.opted_out:
        report.not_linked.append(problem_at(
            lang, row.line, f"{row.parent_phone} a envoyé STOP : relié, mais rien ne lui est envoyé",
            f"{row.parent_phone} sent STOP: linked, but sent nothing"))
        return
    notice = report.notices.setdefault(row.parent_phone,
                                       ParentNotice(row.parent_phone, parent.language or "fr"))
    notice.children.append(row.name or "")
    notice.link_ids.append(link.id)


async def enrol_roster(db: AsyncSession, services: Services, cohort_id: int, rows: list[RosterRow],
                       now: datetime, *, school: str = "") -> ImportReport:
    """Writes the checked rows in the caller's transaction (the caller commits, or rolls back and
    nothing at all is changed). With CONSENT_MODE=school the import is the school's consent for
    each student: recorded with `school` (who imported, as `users show` says it)."""
    report = ImportReport(rows=len(rows))
    consent_by = school if services.settings.safety.consent_mode == "school" else ""
    members = set(await db.scalars(select(CohortMember.user_id).where(CohortMember.cohort_id == cohort_id)))
    for row in rows:
        student = await _student(db, services, row, now, report)
        if student.id not in members:
            db.add(CohortMember(cohort_id=cohort_id, user_id=student.id, joined_at=now))
            members.add(student.id)
            report.joined += 1
        if row.parent_phone:
            await _link(db, services, row, student, now, report)
        if consent_by and await accounts.record_consent(db, student.id, given_by=consent_by, channel="school",
                                                        now=now):
            report.consented += 1
    await db.flush()
    return report


def _names(children: list[str], language: str) -> str:
    named = [c for c in children if c]
    unnamed = len(children) - len(named)
    if not named:
        child = fr_en(language, ("votre enfant", "vos enfants"), ("your child", "your children"))
        return child[unnamed > 1]
    both = fr_en(language, " et ", " and ")
    names = ", ".join(named[:-1]) + both + named[-1] if len(named) > 1 else named[0]
    if unnamed:
        names += fr_en(language, f" (+{unnamed} autre{'s' * (unnamed > 1)})", f" (+{unnamed} more)")
    return names


def linked_text(school: str | None, cohort: str, children: list[str], language: str) -> str:
    """The SMS of a parent linked by the school: who did it, for whom, what comes, how to stop."""
    names = _names(children, language)
    if language == "en":
        who = f"{school} (class {cohort})" if school else f"Your child's school (class {cohort})"
        return (f"Deblo: {who} added you as the parent of {names} to follow their schoolwork: a progress "
                f"summary every week, and CHILDREN shows it any time. {stop_line('en')}")
    who = f"{school} (classe {cohort})" if school else f"L'école de votre enfant (classe {cohort})"
    their = "leurs" if len(children) > 1 else "ses"
    return (f"Deblo : {who} vous a inscrit comme parent de {names} pour suivre {their} progrès "
            f"scolaires : un résumé chaque semaine, et ENFANTS pour le voir à tout moment. {stop_line('fr')}")


async def notify_parents(services: Services, report: ImportReport, school: str | None, cohort: str,
                         now: datetime) -> list[SentNotice]:
    """After the commit: one SMS per newly linked parent; "sent" only when Twilio accepted it."""
    from bot.channel.outbound import send_to_number

    done: list[SentNotice] = []
    for notice in report.notices.values():
        text = linked_text(school, cohort, notice.children, notice.language)
        result = await send_to_number(services, notice.phone, text=text, channel="sms", kind="parent_link")
        if result.ok:
            async with services.sessions() as db:
                await db.execute(update(ParentLink).where(ParentLink.id.in_(notice.link_ids))
                                 .values(invited_at=now))
                await db.commit()
        else:
            log.warning("school's parent notice not sent", extra={"skipped": result.skipped,
                                                                  "error": result.error})
        done.append(SentNotice(notice.phone, result.ok, result.reason))
    return done
