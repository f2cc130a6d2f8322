"""Progress from exercise results: per-subject summaries for students, parents and the weekly SMS.

Privacy: every query here is for one student id that the caller has already checked (the student
themself, or a parent through a confirmed link).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.pipeline.scheduler import Job, Outgoing, deliver_due, plan
from bot.services import Services
from bot.storage.db import rowcount
from bot.storage.models import ExerciseResult, ParentLink, ScheduledSend, User

log = logging.getLogger("deblo.progress")

WEEK = timedelta(days=7)
SUMMARY = "parent_summary"


@dataclass
class SubjectStats:
    subject: str
    total: int = 0
    correct: int = 0
    last7_total: int = 0
    last7_correct: int = 0
    prev7_total: int = 0
    prev7_correct: int = 0


def _percent(correct: int, total: int) -> int:
    return round(100 * correct / total) if total else 0


def _subject_key(subject: str) -> str:
    return " ".join(subject.split()).casefold()


async def subject_stats(db: AsyncSession, student_id: int, now: datetime) -> list[SubjectStats]:
    """One line per subject, most practised first; subjects differing only in case are merged."""
    rows = (
        await db.execute(
            select(ExerciseResult.subject, ExerciseResult.correct, ExerciseResult.created_at).where(
                ExerciseResult.user_id == student_id
            )
        )
    ).all()
    by_key: dict[str, SubjectStats] = {}
    for subject, correct, created_at in rows:
        label = " ".join((subject or "").split())  # "" = no subject given; named when shown
        stats = by_key.setdefault(_subject_key(label), SubjectStats(subject=label[:1].upper() + label[1:]))
        stats.total += 1
        stats.correct += int(bool(correct))
        age = now - created_at
        if timedelta(0) <= age < WEEK:
            stats.last7_total += 1
            stats.last7_correct += int(bool(correct))
        elif WEEK <= age < 2 * WEEK:
            stats.prev7_total += 1
            stats.prev7_correct += int(bool(correct))
    return sorted(by_key.values(), key=lambda s: (-s.total, s.subject))


def _t(language: str, fr: str, en: str) -> str:
    return en if language == "en" else fr


def _label(stats: SubjectStats, language: str) -> str:
    return stats.subject or _t(language, "Divers", "Other")


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
    return _t(language, f"7 derniers jours : {last}, 7 jours d'avant : {before}",
              f"last 7 days: {last}, 7 days before: {before}")


def format_progress(stats: list[SubjectStats], language: str, *, name: str | None = None) -> str:
    """The compact PROGRES answer: per subject, questions answered, % correct, this week vs last."""
    if name:
        head = _t(language, f"📊 Progrès de {name}", f"📊 {name}'s progress")
    else:
        head = _t(language, "📊 Tes progrès", "📊 Your progress")
    if not stats:
        empty = _t(language, "Pas encore d'exercice enregistré.", "No exercise recorded yet.")
        return f"{head}\n{empty}"
    lines = [head]
    for s in stats:
        answered = _t(language, f"{s.total} question{'s' if s.total > 1 else ''}",
                      f"{s.total} question{'s' if s.total > 1 else ''}")
        pct = _percent(s.correct, s.total)
        right = _t(language, f"{pct} % justes", f"{pct}% right")
        subject = _label(s, language)
        lines.append(f"• {subject} : {answered}, {right} ({_trend(s, language)})"
                     if language != "en" else f"• {subject}: {answered}, {right} ({_trend(s, language)})")
    return "\n".join(lines)


def student_name(student: User, language: str) -> str:
    return student.display_name or (student.phone or _t(language, "votre enfant", "your child"))


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


def stop_line(language: str) -> str:
    """What STOP really does (handlers/optout.py): everything stops, on every channel, until START."""
    return _t(language,
              "Répondez STOP pour ne plus recevoir aucun message de Deblo (résumés et rappels compris), "
              "START pour reprendre.",
              "Reply STOP to get no more messages from Deblo at all (summaries and reminders included), "
              "START to resume.")


def weekly_text(stats: list[SubjectStats], name: str, language: str) -> str:
    week = [s for s in stats if s.last7_total]
    if not week:
        stop = stop_line(language)
        return _t(language,
                  f"Deblo : {name} n'a fait aucun exercice cette semaine. Encouragez-le/la ! {stop}",
                  f"Deblo: {name} did no exercise this week. Give them some encouragement! {stop}")
    total = sum(s.last7_total for s in week)
    right = sum(s.last7_correct for s in week)
    parts = ", ".join(f"{_label(s, language)} {s.last7_correct}/{s.last7_total}" for s in week)
    plural = "s" if total > 1 else ""
    before = sum(s.prev7_total for s in stats)
    before_right = sum(s.prev7_correct for s in stats)
    compare = (
        _t(language, f" (semaine d'avant : {_percent(before_right, before)} %)",
           f" (week before: {_percent(before_right, before)}%)")
        if before
        else ""
    )
    return _t(
        language,
        f"Deblo : cette semaine, {name} a répondu à {total} question{plural}, "
        f"{_percent(right, total)} % justes"
        f"{compare}. {parts}. {stop_line(language)}",
        f"Deblo: this week {name} answered {total} question{plural}, {_percent(right, total)}% right"
        f"{compare}. {parts}. {stop_line(language)}",
    )


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
    text = weekly_text(stats, student_name(student, parent.language), parent.language)
    return Outgoing(user=parent, text=text, kind="parent_summary")


async def send_weekly_summaries(services: Services, now: datetime) -> int:
    """The periodic job: one summary per confirmed link, once per weekly slot; returns how many were sent.

    Idempotent across workers: a link is claimed by an atomic UPDATE of `last_summary_at`, and its
    send planned in the same transaction (bot.pipeline.scheduler sends it, retrying a failed send). A link
    confirmed after the slot waits for the next one. Opted-out parents (STOP) are skipped, and the
    outbound path refuses them too. The parent's last channel is used (SMS for a parent who never
    wrote to the bot).
    """
    settings = services.settings
    slot = latest_summary_slot(now, settings.parent_summary_weekday, settings.parent_summary_hour,
                               settings.default_timezone)
    async with services.sessions() as db:
        due = (
            await db.execute(
                select(ParentLink.id, ParentLink.parent_id)
                .join(User, User.id == ParentLink.parent_id)
                .where(
                    ParentLink.status == "confirmed",
                    ParentLink.confirmed_at < slot,
                    or_(ParentLink.last_summary_at.is_(None), ParentLink.last_summary_at < slot),
                    User.opted_out.is_(False),
                )
                .order_by(ParentLink.id)
            )
        ).all()
    for link_id, parent_id in due:
        await _plan(services, link_id, parent_id, slot, now)
    return await deliver_due(services, now, {SUMMARY: _render_summary})


async def weekly_summary_job(services: Services, now: datetime) -> None:
    """The scheduler's entry point (a bot.pipeline.scheduler.Job), ticking
    often; the slot decides when to send."""
    await send_weekly_summaries(services, now)


def weekly_summary_jobs(interval_s: float = 300) -> list[Job]:
    """For the composition root: the job that sends parents their weekly summaries."""
    return [Job(name="parent_weekly_summary", interval_s=interval_s, fn=weekly_summary_job)]
