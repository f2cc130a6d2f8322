"""The teachers' weekly class summary by e-mail: for each of a teacher's classes, the safety flags
still open (how many and since when, never the words: bot.safety), the learners active in the last
7 days, the students at risk and the skills to work on (bot.school.classes).

Sent on TEACHER_SUMMARY_WEEKDAY (0 = Monday, as PARENT_SUMMARY_WEEKDAY) at TEACHER_SUMMARY_HOUR in
DEFAULT_TIMEZONE, through the SMTP settings every e-mail uses (bot.channel.email), in
DEFAULT_LANGUAGE (an operator has no language of their own). Once a week per teacher: the periodic
job claims a teacher by an atomic UPDATE of `Operator.last_summary_at` (so two workers never both
send), and gives the claim back when the mail server refuses, so the next tick tries again. A
teacher added after the week's slot waits for the next one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel.email import EmailError, build_message, send_message, sender_address, smtp_configured
from bot.config_groups import Learning
from bot.formats import day
from bot.learning.progress import latest_summary_slot
from bot.periodic import Job
from bot.render import render
from bot.safety import OpenFlags, open_among, open_line
from bot.school.classes import QUIET_DAYS, AtRisk, ClassSkill, at_risk, is_active, roster, skills_to_work_on
from bot.school.operators import operator_cohorts
from bot.services import Services
from bot.storage.db import rowcount
from bot.storage.models import Cohort, CohortMember, Operator
from bot.texts import fr_en

__all__ = ["ClassSummary", "class_summary", "send_teacher_summaries", "summary_text", "teacher_summary_jobs"]

log = logging.getLogger("bot.school")

JOB_NAME = "teacher_weekly_summary"
MAX_AT_RISK = 15  # per class; the rest counted (the dashboard lists them all)
MAX_SKILLS = 5


@dataclass(frozen=True)
class ClassSummary:
    cohort: str
    students: int
    active: int  # wrote in the last QUIET_DAYS days
    at_risk: tuple[AtRisk, ...]
    skills: tuple[ClassSkill, ...]
    flags: OpenFlags  # the class's students' safety flags no person has acknowledged


async def class_summary(db: AsyncSession, cohort: Cohort, now: datetime, learning: Learning) -> ClassSummary:
    students = await roster(db, cohort.id)
    return ClassSummary(
        cohort=cohort.name, students=len(students), active=sum(is_active(s, now) for s in students),
        at_risk=tuple(await at_risk(db, cohort.id, now, learning)),
        skills=tuple(await skills_to_work_on(db, cohort.id, learning, MAX_SKILLS)),
        flags=await open_among(db, select(CohortMember.user_id).where(CohortMember.cohort_id == cohort.id)))


def _pct(p: float) -> str:
    return f"{round(100 * p)} %"


def summary_text(summaries: list[ClassSummary], language: str, now: datetime, zone: str) -> tuple[str, str]:
    """The e-mail's subject and plain text (bot/templates/email/teacher_summary.*.txt; bot.channel.email
    makes the HTML of it); the week's days in the school's time zone (« du lun. 2 mars au lun. 9 mars
    2026 »)."""
    start = day(now - timedelta(days=QUIET_DAYS), language, zone, year=False)
    end = day(now, language, zone)
    names = ", ".join(s.cohort for s in summaries)
    subject = fr_en(language, f"Deblo : la semaine de vos classes ({names})",
                    f"Deblo: your classes' week ({names})")
    text = render(f"email/teacher_summary.{fr_en(language, 'fr', 'en')}.txt", summaries=summaries,
                  start=start, end=end, quiet_days=QUIET_DAYS, max_at_risk=MAX_AT_RISK, pct=_pct,
                  flags=lambda found: open_line(found, now, language))
    return subject, text


async def _claim(services: Services, operator_id: int, slot: datetime, now: datetime) -> bool:
    async with services.sessions() as db:
        result = await db.execute(update(Operator).where(
            Operator.id == operator_id,
            or_(Operator.last_summary_at.is_(None), Operator.last_summary_at < slot),
        ).values(last_summary_at=now))
        await db.commit()
        return rowcount(result) == 1


async def _give_back(services: Services, operator_id: int, previous: datetime | None) -> None:
    """The claim back: this tick holds it (nobody else claims a teacher claimed for this slot)."""
    async with services.sessions() as db:
        await db.execute(update(Operator).where(Operator.id == operator_id).values(last_summary_at=previous))
        await db.commit()


async def _send_one(services: Services, operator_id: int, now: datetime) -> bool:
    """Builds and sends one teacher's e-mail; False when they have no class (nothing to say)."""
    settings = services.settings
    async with services.sessions() as db:
        operator = await db.get(Operator, operator_id)
        if operator is None:
            return False
        cohorts = await operator_cohorts(db, operator_id)
        summaries = [await class_summary(db, c, now, settings.learning) for c in cohorts]
        email = operator.email
    if not summaries:
        return False
    subject, text = summary_text(summaries, settings.default_language, now, settings.default_timezone)
    message = build_message(from_addr=sender_address(settings), to=[email], subject=subject, body=text)
    await send_message(settings, message)
    return True


async def send_teacher_summaries(services: Services, now: datetime) -> int:
    """The periodic job's work: each teacher's summary once per weekly slot; returns how many went."""
    settings = services.settings
    if smtp_configured(settings) is not None:
        return 0  # no mail server: nothing to send with (bot.channel.email says so at use)
    learning = settings.learning
    slot = latest_summary_slot(now, learning.teacher_summary_weekday, learning.teacher_summary_hour,
                               settings.default_timezone)
    async with services.sessions() as db:
        due = (await db.execute(
            select(Operator.id, Operator.last_summary_at).where(
                Operator.role == "teacher", Operator.created_at < slot,
                or_(Operator.last_summary_at.is_(None), Operator.last_summary_at < slot))
            .order_by(Operator.id))).all()
    sent = 0
    for operator_id, previous in due:
        if not await _claim(services, operator_id, slot, now):
            continue  # another worker has it
        try:
            sent += int(await _send_one(services, operator_id, now))
        except Exception as exc:
            await _give_back(services, operator_id, previous)
            if not isinstance(exc, EmailError):
                raise
            log.warning("teacher summary not sent; retried at the next tick",
                        extra={"operator_id": operator_id, "error": str(exc)})
    return sent


async def _job(services: Services, now: datetime) -> None:
    await send_teacher_summaries(services, now)


def teacher_summary_jobs(interval_s: float = 300) -> list[Job]:
    """For the composition root: the job that e-mails teachers their weekly class summary."""
    return [Job(name=JOB_NAME, interval_s=interval_s, fn=_job)]
