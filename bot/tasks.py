"""Tasks with a due time, and their reminders.

A task's reminders are two rows' worth of state in the database, so they survive restarts: the lead
reminder (REMINDER_LEAD_MINUTES before) and the due reminder. Every worker runs the reminder job;
each reminder is claimed with one atomic UPDATE … WHERE <not yet sent> before anything is sent, so
whichever worker wins sends it and the others see zero rows changed. A reminder is therefore sent at
most once: when a send fails after the claim it is logged, never repeated to someone who may have
received it already.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import and_, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.models import ParentLink, Task, User
from bot.services import Services

log = logging.getLogger(__name__)

PRIORITIES = ("low", "normal", "high")
MAX_TITLE = 200
MAX_TAGS = 10
MAX_TAG = 32
DEFAULT_DUE_TIME = time(9, 0)
_BATCH = 200


class TaskInputError(ValueError):
    """The model or the user gave a task we cannot store; the message says what to fix."""


def zone(name: str | None, default: str = "Africa/Abidjan") -> ZoneInfo:
    for candidate in (name, default, "UTC"):
        if not candidate:
            continue
        try:
            return ZoneInfo(candidate)
        except (ZoneInfoNotFoundError, ValueError):
            continue
    return ZoneInfo("UTC")


def parse_due(due_date: str | None, due_time: str | None, tz: ZoneInfo, now: datetime) -> datetime | None:
    """The due moment in UTC from a local date (YYYY-MM-DD) and time (HH:MM); None without a date."""
    due_date = (due_date or "").strip()
    due_time = (due_time or "").strip()
    if not due_date:
        if due_time:
            raise TaskInputError("due_time needs a due_date (YYYY-MM-DD)")
        return None
    try:
        day = date.fromisoformat(due_date)
    except ValueError:
        raise TaskInputError(f"due_date must look like 2026-03-15, got {due_date!r}") from None
    at = DEFAULT_DUE_TIME
    if due_time:
        match = re.fullmatch(r"(\d{1,2})[:hH](\d{2})?", due_time)
        if not match or int(match.group(1)) > 23 or int(match.group(2) or 0) > 59:
            raise TaskInputError(f"due_time must look like 14:30, got {due_time!r}")
        at = time(int(match.group(1)), int(match.group(2) or 0))
    local = datetime.combine(day, at, tzinfo=tz)
    due = local.astimezone(now.tzinfo)
    if due <= now:
        raise TaskInputError(
            f"the due time {local:%Y-%m-%d %H:%M} is in the past "
            f"(it is now {now.astimezone(tz):%Y-%m-%d %H:%M} for the user)"
        )
    return due


def clean_tags(raw: Any) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        raw = [t for t in re.split(r"[,\s]+", raw) if t]
    if not isinstance(raw, list):
        raise TaskInputError("tags must be a list of short words")
    tags: list[str] = []
    for tag in raw:
        text = str(tag).strip().lstrip("#")[:MAX_TAG]
        if text and text not in tags:
            tags.append(text)
    return tags[:MAX_TAGS]


async def create(
    services: Services,
    user_id: int,
    *,
    title: str,
    priority: str = "normal",
    due_date: str | None = None,
    due_time: str | None = None,
    tags: Any = None,
) -> tuple[Task, ZoneInfo]:
    title = (title or "").strip()
    if not title:
        raise TaskInputError("title is required")
    if len(title) > MAX_TITLE:
        raise TaskInputError(f"title is too long ({len(title)} characters, at most {MAX_TITLE})")
    priority = (priority or "normal").strip().lower()
    if priority not in PRIORITIES:
        raise TaskInputError(f"priority must be one of {', '.join(PRIORITIES)}, got {priority!r}")
    now = services.clock()
    lead = timedelta(minutes=services.settings.reminder_lead_minutes)
    async with services.sessions() as db:
        user = await db.get(User, user_id)
        if user is None:
            raise LookupError(f"no user {user_id}")
        tz = zone(user.timezone, services.settings.default_timezone)
        due_at = parse_due(due_date, due_time, tz, now)
        task = Task(user_id=user_id, title=title, priority=priority, due_at=due_at, tags=clean_tags(tags))
        if due_at is not None and due_at - lead <= now:
            # Due sooner than the lead time: the user just set it, an "in N minutes" note is noise.
            task.lead_reminder_sent_at = now
        task.created_at = now
        db.add(task)
        await db.commit()
    return task, tz


async def open_tasks(db: AsyncSession, user_id: int) -> list[Task]:
    rows = await db.scalars(
        select(Task)
        .where(Task.user_id == user_id, Task.done.is_(False))
        .order_by(Task.due_at.is_(None), Task.due_at, Task.id)
    )
    return list(rows)


async def close(db: AsyncSession, user_id: int, task_id: int, now: datetime) -> bool:
    """Marks a task done; False when it is not this user's open task. No reminder follows."""
    result = await db.execute(
        update(Task)
        .where(Task.id == task_id, Task.user_id == user_id, Task.done.is_(False))
        .values(done=True, reminder_sent_at=func.coalesce(Task.reminder_sent_at, now))
    )
    return bool(result.rowcount)


def local_time(when: datetime, tz: ZoneInfo) -> str:
    return when.astimezone(tz).strftime("%d/%m/%Y %H:%M")


# --- reminders -------------------------------------------------------------------------------------


@dataclass
class Claimed:
    task_id: int
    kind: str  # "lead" | "due"


async def _claim(services: Services, now: datetime) -> list[Claimed]:
    lead = timedelta(minutes=services.settings.reminder_lead_minutes)
    claimed: list[Claimed] = []
    async with services.sessions() as db:
        due_ids = list(
            await db.scalars(
                select(Task.id)
                .where(Task.done.is_(False), Task.reminder_sent_at.is_(None), Task.due_at <= now)
                .order_by(Task.due_at)
                .limit(_BATCH)
            )
        )
        for task_id in due_ids:
            result = await db.execute(
                update(Task)
                .where(Task.id == task_id, Task.reminder_sent_at.is_(None), Task.done.is_(False))
                .values(
                    reminder_sent_at=now, lead_reminder_sent_at=func.coalesce(Task.lead_reminder_sent_at, now)
                )
            )
            if result.rowcount == 1:
                claimed.append(Claimed(task_id, "due"))
        lead_ids = list(
            await db.scalars(
                select(Task.id)
                .where(
                    Task.done.is_(False),
                    Task.reminder_sent_at.is_(None),
                    Task.lead_reminder_sent_at.is_(None),
                    and_(Task.due_at > now, Task.due_at <= now + lead),
                )
                .order_by(Task.due_at)
                .limit(_BATCH)
            )
        )
        for task_id in lead_ids:
            result = await db.execute(
                update(Task)
                .where(
                    Task.id == task_id,
                    Task.lead_reminder_sent_at.is_(None),
                    Task.reminder_sent_at.is_(None),
                    Task.done.is_(False),
                )
                .values(lead_reminder_sent_at=now)
            )
            if result.rowcount == 1:
                claimed.append(Claimed(task_id, "lead"))
        # The claim is durable before anything leaves: a crash now loses a reminder, never doubles one.
        await db.commit()
    return claimed


def _user_text(user: User, task: Task, kind: str, tz: ZoneInfo, now: datetime) -> str:
    assert task.due_at is not None
    when = local_time(task.due_at, tz)
    if kind == "lead":
        minutes = max(1, round((task.due_at - now).total_seconds() / 60))
        if user.language == "en":
            return (
                f"⏰ Reminder: “{task.title}” is due at {when} (in {minutes} min). "
                "Reply TASKS for your tasks."
            )
        return (
            f"⏰ Rappel : « {task.title} » est prévu à {when} (dans {minutes} min). "
            "Réponds TACHES pour la liste."
        )
    if user.language == "en":
        return f"⏰ It's time: “{task.title}” ({when}). Reply DONE n once done (TASKS for the list)."
    return (
        f"⏰ C'est l'heure : « {task.title} » ({when}). Réponds FAIT n quand c'est fait (TACHES : la liste)."
    )


def _parent_text(parent: User, student: User, task: Task, kind: str, tz: ZoneInfo) -> str:
    assert task.due_at is not None
    name = student.display_name or student.phone or "votre enfant"
    when = local_time(task.due_at, tz)
    if parent.language == "en":
        lead = "coming up" if kind == "lead" else "due now"
        return f"Deblo: reminder for {name}, task {lead}: “{task.title}” ({when})."
    lead = "bientôt" if kind == "lead" else "maintenant"
    return f"Deblo : rappel pour {name}, tâche prévue {lead} : « {task.title} » ({when})."


async def _deliver(services: Services, claimed: Claimed, now: datetime) -> None:
    from bot.outbound import send_to_user  # late: bot.outbound is the message path's module

    async with services.sessions() as db:
        task = await db.get(Task, claimed.task_id)
        user = await db.get(User, task.user_id) if task else None
        if task is None or user is None:
            return
        parents = list(
            await db.scalars(
                select(User)
                .join(ParentLink, ParentLink.parent_id == User.id)
                .where(ParentLink.student_id == user.id, ParentLink.status == "confirmed")
            )
        )
    tz = zone(user.timezone, services.settings.default_timezone)
    if not user.opted_out:
        try:
            await send_to_user(
                services, user, text=_user_text(user, task, claimed.kind, tz, now), kind="reminder"
            )
        except Exception:
            log.exception("reminder for task %s to user %s failed", task.id, user.id)
    for parent in parents:
        if parent.opted_out or not parent.phone:
            continue
        try:
            await send_to_user(
                services,
                parent,
                text=_parent_text(parent, user, task, claimed.kind, tz),
                channel="sms",
                kind="reminder",
            )
        except Exception:
            log.exception("reminder for task %s to parent %s failed", task.id, parent.id)


async def send_due_reminders(services: Services, now: datetime | None = None) -> int:
    """The scheduler job: sends the reminders that are due and not yet claimed; returns how many."""
    now = now or services.clock()
    claimed = await _claim(services, now)
    for item in claimed:
        await _deliver(services, item, now)
    return len(claimed)


REMINDER_INTERVAL_S = 30.0


async def _reminder_tick(services: Services, now: datetime) -> None:
    await send_due_reminders(services, now)


def reminder_jobs() -> list[Any]:
    """The periodic job bot/cli.py registers: every worker runs it, each reminder is claimed once."""
    from bot.scheduler import Job

    return [Job(name="task_reminders", interval_s=REMINDER_INTERVAL_S, fn=_reminder_tick)]
