"""Progress from exercise results: per-subject summaries for students, parents and the weekly SMS.

Privacy: every query here is for one student id that the caller has already checked (the student
themself, or a parent through a confirmed link).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel.keywords import stop_line
from bot.channel.scheduled import Outgoing, deliver_due, plan
from bot.config_groups import Learning
from bot.learning.assigned import homework_line
from bot.learning.profile import (
    LEARNING,
    MASTERED,
    REVIEW,
    STATUSES,
    SkillView,
    skill_views,
    subject_name,
    subject_order,
    to_work_on,
)
from bot.learning.subjects import canonical_subject
from bot.learning.weekly import streak_line
from bot.periodic import Job
from bot.services import Services
from bot.storage.db import rowcount
from bot.storage.models import ExerciseResult, ParentLink, ScheduledSend, User
from bot.texts import fr_en

log = logging.getLogger("deblo.progress")

WEEK = timedelta(days=7)
SUMMARY = "parent_summary"
# What a reply shows at most: the rest is counted (« +2 autres »). By SMS (`compact`), fewer, shorter
# and without the weeks' trend, so that a reply stays a few segments.
MAX_SUBJECTS, SMS_SUBJECTS = 6, 3
MAX_SKILLS_PER_STATUS, SMS_SKILLS_PER_STATUS = 3, 2
LABEL_MAX, SMS_LABEL_MAX = 40, 25
MAX_STRUGGLES = 3
_STATUS_WORDS = {MASTERED: ("maîtrisé", "mastered"), LEARNING: ("en cours", "in progress"),
                 REVIEW: ("à revoir", "to review")}


@dataclass
class SubjectStats:
    """One canonical subject. The totals and the weeks count answers the server checked; what the
    model only reported (report_exercise_result) is counted apart, never in a percentage."""

    subject: str  # canonical (bot.learning.SUBJECTS)
    total: int = 0
    correct: int = 0
    last7_total: int = 0
    last7_correct: int = 0
    prev7_total: int = 0
    prev7_correct: int = 0
    unverified_total: int = 0
    unverified_correct: int = 0


def _percent(correct: int, total: int) -> int:
    return round(100 * correct / total) if total else 0


async def subject_stats(db: AsyncSession, student_id: int, now: datetime) -> list[SubjectStats]:
    """One line per canonical subject, most practised first. Rows written before subjects were
    canonical hold free text (« maths », « Mathématiques »): merged here by `canonical_subject`."""
    rows = (
        await db.execute(
            select(ExerciseResult.subject, ExerciseResult.correct, ExerciseResult.created_at,
                   ExerciseResult.verified).where(ExerciseResult.user_id == student_id)
        )
    ).all()
    by_subject: dict[str, SubjectStats] = {}
    for subject, correct, created_at, verified in rows:
        name = canonical_subject(subject or "")
        stats = by_subject.setdefault(name, SubjectStats(subject=name))
        if not verified:
            stats.unverified_total += 1
            stats.unverified_correct += int(bool(correct))
            continue
        stats.total += 1
        stats.correct += int(bool(correct))
        age = now - created_at
        if timedelta(0) <= age < WEEK:
            stats.last7_total += 1
            stats.last7_correct += int(bool(correct))
        elif WEEK <= age < 2 * WEEK:
            stats.prev7_total += 1
            stats.prev7_correct += int(bool(correct))
    return sorted(by_subject.values(),
                  key=lambda s: (-s.total, -s.unverified_total, subject_order(s.subject)))


def _label(stats: SubjectStats, language: str) -> str:
    return subject_name(stats.subject, language)


def _trend(stats: SubjectStats, language: str) -> str:
    last = (
        f"{stats.last7_correct}/{stats.last7_total} ({_percent(stats.last7_correct, stats.last7_total)} %)"
        if stats.last7_total
        else "-"
    )
    before = (
        f"{stats.prev7_correct}/{stats.prev7_total} ({_percent(stats.prev7_correct, stats.prev7_total)} %)"
        if stats.prev7_total
        else "-"
    )
    return fr_en(language, f"7 derniers jours : {last}, 7 jours d'avant : {before}",
                 f"last 7 days: {last}, 7 days before: {before}")


def _subject_line(s: SubjectStats, language: str, compact: bool) -> str:
    subject = _label(s, language)
    if not s.total:
        return fr_en(language, f"• {subject} : aucune réponse vérifiée", f"• {subject}: no checked answer")
    answered = f"{s.total} question{'s' if s.total > 1 else ''}"
    pct = _percent(s.correct, s.total)
    trend = "" if compact else f" ({_trend(s, language)})"
    return fr_en(language, f"• {subject} : {answered}, {pct} % justes{trend}",
                 f"• {subject}: {answered}, {pct}% right{trend}")


def _unverified_line(s: SubjectStats, language: str) -> str:
    n, ok = s.unverified_total, s.unverified_correct
    many, oks = "s" if n > 1 else "", "s" if ok > 1 else ""
    return fr_en(language, f"  déclarés, non vérifiés : {n} exercice{many}, {ok} réussi{oks}",
                 f"  reported, not checked: {n} exercise{many}, {ok} done right")


def format_progress(stats: list[SubjectStats], language: str, *, name: str | None = None,
                    skills: Sequence[SkillView] | None = None, due: int = 0,
                    work_on: Sequence[SkillView] = (), compact: bool = False, streak: int = 0) -> str:
    """The PROGRES answer: the streak (days in a row with a checked answer), per subject, checked
    questions, % right, this week vs last, then (with `skills`) its skills by status with their
    answer counts, and what was only reported, apart. `work_on` (ENFANTS) names the skills the
    student struggles with; `due` the items to review. `compact` (SMS): fewer subjects and skills,
    no trend."""
    most = SMS_SUBJECTS if compact else MAX_SUBJECTS
    if name:
        head = fr_en(language, f"📊 Progrès de {name}", f"📊 {name}'s progress")
    else:
        head = fr_en(language, "📊 Progrès", "📊 Your progress")
    if not stats and not skills:
        empty = fr_en(language, "Pas encore d'exercice enregistré.", "No exercise recorded yet.")
        return f"{head}\n{empty}"
    lines = [head, streak_line(streak, language)] if streak else [head]
    shown = {s.subject for s in stats[:most]}
    extra = [s.subject for s in skills or () if s.subject not in shown]
    rows = stats[:most] + [SubjectStats(subject=x) for x in dict.fromkeys(extra)][: max(0, most - len(stats))]
    for s in rows:
        lines.append(_subject_line(s, language, compact))
        if skills:
            lines += skill_lines([k for k in skills if k.subject == s.subject], language, compact)
        if s.unverified_total:
            lines.append(_unverified_line(s, language))
    if len(stats) > most:
        more = len(stats) - most
        many = "s" if more > 1 else ""
        lines.append(fr_en(language, f"(+{more} autre{many} matière{many})", f"(+{more} more subject{many})"))
    if work_on:
        lines.append(struggles_line(name, work_on, language, SMS_LABEL_MAX if compact else LABEL_MAX))
    if due:
        lines.append(due_line(due, language))
    return "\n".join(lines)


def _skill_name(skill: SkillView, language: str, limit: int) -> str:
    """Under its subject's line: a skill with no topic is the subject « in general »."""
    return skill.label[:limit] if skill.label else fr_en(language, "général", "general")


def _answers(n: int, language: str) -> str:
    return fr_en(language, f"{n} réponse{'s' if n > 1 else ''}", f"{n} answer{'s' if n > 1 else ''}")


def skill_lines(skills: Sequence[SkillView], language: str, compact: bool = False) -> list[str]:
    """One line per status (mastered, in progress, to review) with each skill's count of checked
    answers; at most MAX_SKILLS_PER_STATUS named (SMS_SKILLS_PER_STATUS by SMS), the others counted."""
    most, limit = (SMS_SKILLS_PER_STATUS, SMS_LABEL_MAX) if compact else (MAX_SKILLS_PER_STATUS, LABEL_MAX)
    lines = []
    for status in STATUSES:
        these = sorted((s for s in skills if s.status == status), key=lambda s: (-s.answers, s.label))
        if not these:
            continue
        named = ", ".join(f"{_skill_name(s, language, limit)} ({_answers(s.answers, language)})"
                          for s in these[:most])
        more = len(these) - most
        if more > 0:
            named += fr_en(language, f", +{more} autre{'s' if more > 1 else ''}", f", +{more} more")
        fr, en = _STATUS_WORDS[status]
        lines.append(fr_en(language, f"  {fr} : {named}", f"  {en}: {named}"))
    return lines


def _names(skills: Sequence[SkillView], language: str, limit: int) -> str:
    names = [s.shown(language)[:limit] for s in skills[:MAX_STRUGGLES]]
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + fr_en(language, " et ", " and ") + names[-1]


def struggles_line(name: str | None, skills: Sequence[SkillView], language: str,
                   limit: int = LABEL_MAX) -> str:
    """« Awa a du mal avec fractions et géométrie » (skills from checked answers only)."""
    names = _names(skills, language, limit)
    if name is None:
        return fr_en(language, f"À retravailler : {names}.", f"You struggle with {names}.")
    return fr_en(language, f"{name} a du mal avec {names}.", f"{name} struggles with {names}.")


def due_line(due: int, language: str) -> str:
    return fr_en(language, f"🔁 {due} question{'s' if due > 1 else ''} à revoir — REVISION pour réviser",
                 f"🔁 {due} question{'s' if due > 1 else ''} to review — send REVIEW")


def student_name(student: User, language: str) -> str:
    return student.display_name or (student.phone or fr_en(language, "votre enfant", "your child"))


# --- the parents' weekly summary -----------------------------------------------------------------


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def latest_summary_slot(now: datetime, weekday: int, hour: int, timezone: str) -> datetime:
    """The most recent scheduled summary time at or before `now` (weekday 0 = Monday)."""
    local = now.astimezone(_zone(timezone))
    slot = (local - timedelta(days=(local.weekday() - weekday) % 7)).replace(
        hour=hour, minute=0, second=0, microsecond=0
    )
    if slot > local:
        slot -= WEEK
    return slot.astimezone(now.tzinfo)


def weekly_text(stats: list[SubjectStats], name: str, language: str,
                struggles: Sequence[SkillView] = (), homework: str = "") -> str:
    """The parent's weekly SMS: the week's checked answers per subject, the week before, the
    skills the student struggles with (checked answers only) and the teachers' assignments
    (bot.learning.assigned). Reported results are left out."""
    week = [s for s in stats if s.last7_total]
    stop = f"{homework} {stop_line(language)}" if homework else stop_line(language)
    if not week:
        return fr_en(language,
                     f"Deblo : {name} n'a fait aucun exercice cette semaine. Encouragez-le/la ! {stop}",
                     f"Deblo: {name} did no exercise this week. Give them some encouragement! {stop}")
    total = sum(s.last7_total for s in week)
    right = sum(s.last7_correct for s in week)
    parts = ", ".join(f"{_label(s, language)} {s.last7_correct}/{s.last7_total}" for s in week[:MAX_SUBJECTS])
    if len(week) > MAX_SUBJECTS:  # the rest is in ENFANTS
        parts += fr_en(language, ", …", ", …")
    plural = "s" if total > 1 else ""
    before = sum(s.prev7_total for s in stats)
    before_right = sum(s.prev7_correct for s in stats)
    compare = (
        fr_en(language, f" (semaine d'avant : {_percent(before_right, before)} %)",
              f" (week before: {_percent(before_right, before)}%)")
        if before
        else ""
    )
    hard = f" {struggles_line(name, struggles, language, SMS_LABEL_MAX)}" if struggles else ""
    return fr_en(
        language,
        f"Deblo : cette semaine, {name} a répondu à {total} question{plural}, "
        f"{_percent(right, total)} % justes"
        f"{compare}. {parts}.{hard} {stop}",
        f"Deblo: this week {name} answered {total} question{plural}, {_percent(right, total)}% right"
        f"{compare}. {parts}.{hard} {stop}",
    )


async def struggles(db: AsyncSession, learning: Learning, student_id: int) -> list[SkillView]:
    """The skills a student struggles with (« à revoir » by checked answers), the weakest first."""
    return to_work_on(await skill_views(db, student_id, learning), MAX_STRUGGLES, struggling=True)


async def _plan(services: Services, link_id: int, parent_id: int, slot: datetime, now: datetime) -> bool:
    """Marks the link as summarised for this slot and plans the send; only one worker wins the UPDATE."""
    async with services.sessions() as db:
        result = await db.execute(
            update(ParentLink)
            .where(
                ParentLink.id == link_id,
                ParentLink.status == "confirmed",
                or_(ParentLink.last_summary_at.is_(None), ParentLink.last_summary_at < slot),
            )
            .values(last_summary_at=now)
        )
        won = rowcount(result) == 1
        if won:
            await plan(db, now, key=f"summary:{link_id}:{slot:%Y-%m-%dT%H}", kind=SUMMARY, user_id=parent_id,
                       link_id=link_id, slot_at=slot)
        await db.commit()
        return won


async def _render_summary(services: Services, db: AsyncSession, row: ScheduledSend,
                          now: datetime) -> Outgoing | None:
    link = await db.get(ParentLink, row.link_id) if row.link_id is not None else None
    if link is None or link.status != "confirmed":
        return None  # refused or stopped since it was planned
    parent = await db.get(User, link.parent_id)
    student = await db.get(User, link.student_id)
    if parent is None or student is None:
        return None
    # The week that ended at the slot, however late a retry goes out.
    stats = await subject_stats(db, student.id, row.slot_at)
    weak = await struggles(db, services.settings.learning, student.id)
    homework = await homework_line(db, student.id, row.slot_at, parent.language)
    text = weekly_text(stats, student_name(student, parent.language), parent.language, weak, homework)
    return Outgoing(user=parent, text=text, kind="parent_summary")


async def send_weekly_summaries(services: Services, now: datetime) -> int:
    """The periodic job: one summary per confirmed link, once per weekly slot; returns how many were sent.

    Idempotent across workers: a link is claimed by an atomic UPDATE of `last_summary_at`, and its
    send planned in the same transaction (bot.channel.scheduled sends it, retrying a failed send). A link
    confirmed after the slot waits for the next one; the slot is in the parent's own zone. Opted-out
    parents (STOP) are skipped, and the outbound path refuses them too. The parent's last channel is
    used (SMS for a parent who never wrote to the bot).
    """
    settings = services.settings
    async with services.sessions() as db:
        # Each parent's slot is PARENT_SUMMARY_HOUR of their own zone (a parent in Antananarivo gets it
        # at their 18:00, not at the server's): the links are taken zone by zone.
        zones = set(await db.scalars(select(User.timezone).distinct().join(
            ParentLink, ParentLink.parent_id == User.id).where(ParentLink.status == "confirmed")))
        due: list[tuple[int, int, datetime]] = []
        for zone_name in sorted(zones, key=str):
            slot = latest_summary_slot(now, settings.parent_summary_weekday, settings.parent_summary_hour,
                                       zone_name or settings.default_timezone)
            rows = (await db.execute(
                select(ParentLink.id, ParentLink.parent_id).join(User, User.id == ParentLink.parent_id).where(
                    ParentLink.status == "confirmed", ParentLink.confirmed_at < slot,
                    or_(ParentLink.last_summary_at.is_(None), ParentLink.last_summary_at < slot),
                    User.opted_out.is_(False), User.timezone == zone_name,
                ).order_by(ParentLink.id))).all()
            due += [(link_id, parent_id, slot) for link_id, parent_id in rows]
    for link_id, parent_id, slot in due:
        await _plan(services, link_id, parent_id, slot, now)
    return await deliver_due(services, now, {SUMMARY: _render_summary})


async def weekly_summary_job(services: Services, now: datetime) -> None:
    """The scheduler's entry point (a bot.periodic.Job), ticking
    often; the slot decides when to send."""
    await send_weekly_summaries(services, now)


def weekly_summary_jobs(interval_s: float = 300) -> list[Job]:
    """For the composition root: the job that sends parents their weekly summaries."""
    return [Job(name="parent_weekly_summary", interval_s=interval_s, fn=weekly_summary_job)]
