"""The teachers' weekly class summary by e-mail: for each of a teacher's classes, the learners active
in the last 7 days, the students at risk and the skills to work on (bot.school.classes).

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
from bot.learning.progress import latest_summary_slot
from bot.periodic import Job
from bot.school.classes import QUIET_DAYS, AtRisk, ClassSkill, at_risk, is_active, roster, skills_to_work_on
from bot.school.operators import operator_cohorts
from bot.services import Services
from bot.storage.db import rowcount
from bot.storage.models import Cohort, Operator
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


async def class_summary(db: AsyncSession, cohort: Cohort, now: datetime, learning: Learning) -> ClassSummary:
    students = await roster(db, cohort.id)
    return ClassSummary(
        cohort=cohort.name, students=len(students), active=sum(is_active(s, now) for s in students),
        at_risk=tuple(await at_risk(db, cohort.id, now, learning)),
        skills=tuple(await skills_to_work_on(db, cohort.id, learning, MAX_SKILLS)))


def _pct(p: float) -> str:
    return f"{round(100 * p)} %"


def _risk_line(risk: AtRisk, language: str) -> str:
    reasons = []
    if risk.quiet_days == -1:
        reasons.append(fr_en(language, "n'a encore jamais écrit", "has not written yet"))
    elif risk.quiet_days is not None:
        reasons.append(fr_en(language, f"aucun message depuis {risk.quiet_days} jours",
                             f"no message for {risk.quiet_days} days"))
    for fall in risk.fallen[:2]:
        what = f"{fall.label} {_pct(fall.before)} → {_pct(fall.now)}"
        reasons.append(fr_en(language, f"maîtrise en baisse : {what}", f"mastery falling: {what}"))
    return fr_en(language, f"  • {risk.student.shown()} : " + " ; ".join(reasons),
                 f"  • {risk.student.shown()}: " + "; ".join(reasons))


def _skill_line(skill: ClassSkill, language: str) -> str:
    if language == "en":
        return (f"  • {skill.shown('en')}: {_pct(skill.mean)} on average, {skill.struggling} of "
                f"{skill.students} students to review")
    return (f"  • {skill.shown('fr')} : {_pct(skill.mean)} en moyenne, {skill.struggling} élève(s) sur "
            f"{skill.students} à revoir")


def _class_block(summary: ClassSummary, language: str) -> list[str]:
    lines = [fr_en(language, f"Classe {summary.cohort} — {summary.students} élèves",
                   f"Class {summary.cohort} — {summary.students} students"),
             fr_en(language,
                   f"- Actifs ces {QUIET_DAYS} derniers jours : {summary.active} sur {summary.students}",
                   f"- Active in the last {QUIET_DAYS} days: {summary.active} of {summary.students}")]
    if summary.at_risk:
        lines.append(fr_en(language, f"- À suivre ({len(summary.at_risk)}) :",
                           f"- To follow up ({len(summary.at_risk)}):"))
        lines += [_risk_line(r, language) for r in summary.at_risk[:MAX_AT_RISK]]
        more = len(summary.at_risk) - MAX_AT_RISK
        if more > 0:
            lines.append(fr_en(language, f"  … et {more} autres au tableau de bord",
                               f"  … and {more} more on the dashboard"))
    else:
        lines.append(fr_en(language, "- Personne à risque cette semaine.", "- Nobody at risk this week."))
    if summary.skills:
        lines.append(fr_en(language, "- À travailler en classe :", "- Skills to work on in class:"))
        lines += [_skill_line(s, language) for s in summary.skills]
    return lines


def summary_text(summaries: list[ClassSummary], language: str, now: datetime) -> tuple[str, str]:
    """The e-mail's subject and plain text (bot.channel.email makes the HTML of it)."""
    start, end = (now - timedelta(days=QUIET_DAYS)).strftime("%d/%m"), now.strftime("%d/%m")
    names = ", ".join(s.cohort for s in summaries)
    subject = fr_en(language, f"Deblo : la semaine de vos classes ({names})",
                    f"Deblo: your classes' week ({names})")
    lines = [fr_en(language, "Bonjour,", "Hello,"), "",
             fr_en(language, f"Voici la semaine de vos classes sur Deblo (du {start} au {end}).",
                   f"Here is your classes' week on Deblo ({start} to {end})."), ""]
    for summary in summaries:
        lines += [*_class_block(summary, language), ""]
    lines.append(fr_en(language,
                       "Un élève est à suivre après 7 jours sans message, ou quand la maîtrise d'une "
                       "compétence baisse de 10 points ou plus dans la semaine.",
                       "A student is at risk after 7 days without a message, or when a skill's mastery "
                       "falls by 10 points or more in the week."))
    return subject, "\n".join(lines)


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
    subject, text = summary_text(summaries, settings.default_language, now)
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
