"""Tasks with a due time, and their reminders.

A task has two reminders, both kept in the database so that they survive restarts: the lead
reminder (REMINDER_LEAD_MINUTES before) and the due reminder. Every worker runs the reminder job;
each reminder is taken off its task with one atomic UPDATE … WHERE <not yet planned> and planned as
a ScheduledSend row in the same transaction, so whichever worker wins plans it and the others see
zero rows changed. bot.channel.scheduled then sends it at least once and never twice (a failed send is
retried with backoff, a bounded number of times). Confirmed parents do not get each reminder: they
get one digest a day of their children's tasks (`send_parent_digests`).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import and_, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.assistant.errors import AssistantError
from bot.channel.keywords import stop_line
from bot.channel.scheduled import Outgoing, deliver_due, plan
from bot.clock import zone
from bot.periodic import Job
from bot.services import Services
from bot.storage.db import rowcount
from bot.storage.models import ParentLink, ScheduledSend, Task, User
from bot.texts import fr_en

log = logging.getLogger(__name__)

PRIORITIES = ("low", "normal", "high")
MAX_TITLE = 200
MAX_TAGS = 10
MAX_TAG = 32
DEFAULT_DUE_TIME = time(9, 0)
_BATCH = 200


class TaskInputError(AssistantError, ValueError):
    """The model or the user gave a task we cannot store; the message says what to fix."""


class TaskLimitError(TaskInputError):
    """The user already has MAX_OPEN_TASKS open tasks: some must be closed before another is added."""




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
        await _check_open_tasks(db, user_id, services.settings.max_open_tasks)
        task = Task(user_id=user_id, title=title, priority=priority, due_at=due_at, tags=clean_tags(tags))
        if due_at is not None and due_at - lead <= now:
            # Due sooner than the lead time: the user just set it, an "in N minutes" note is noise.
            task.lead_reminder_sent_at = now
        task.created_at = now
        db.add(task)
        await db.commit()
    return task, tz


async def _check_open_tasks(db: AsyncSession, user_id: int, cap: int) -> None:
    """A cap on open tasks: each may end up in reminders and in a parent's digest. A user's turns run
    one at a time (the user's lock), so counting then inserting cannot overshoot."""
    count = int(await db.scalar(
        select(func.count(Task.id)).where(Task.user_id == user_id, Task.done.is_(False))
    ) or 0)
    if count >= cap:
        raise TaskLimitError(
            f"not created: the user already has {count} open task{'s' if count != 1 else ''}, "
            f"the most allowed is {cap}. Tell the user to close some first: "
            "TACHES (TASKS) lists them, FAIT n (DONE n) closes one."
        )


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
    return bool(rowcount(result))


def local_time(when: datetime, tz: ZoneInfo) -> str:
    return when.astimezone(tz).strftime("%d/%m/%Y %H:%M")


# --- reminders -------------------------------------------------------------------------------------

LEAD = "reminder_lead"
DUE = "reminder_due"


async def _plan_reminders(services: Services, now: datetime) -> None:
    """Takes the reminders that are due off the tasks (one atomic UPDATE each) and plans their sends.

    The task's `*_sent_at` column says the reminder was planned; its ScheduledSend row says how the
    send went. Both change in one transaction, so a reminder is planned once whichever worker wins."""
    lead = timedelta(minutes=services.settings.reminder_lead_minutes)
    async with services.sessions() as db:
        due = (
            await db.execute(
                select(Task.id, Task.user_id, Task.due_at)
                .where(Task.done.is_(False), Task.reminder_sent_at.is_(None), Task.due_at <= now)
                .order_by(Task.due_at)
                .limit(_BATCH)
            )
        ).all()
        for task_id, user_id, due_at in due:
            assert due_at is not None  # the query's bounds on due_at leave NULL out
            result = await db.execute(
                update(Task)
                .where(Task.id == task_id, Task.reminder_sent_at.is_(None), Task.done.is_(False))
                .values(
                    reminder_sent_at=now, lead_reminder_sent_at=func.coalesce(Task.lead_reminder_sent_at, now)
                )
            )
            if rowcount(result) == 1:
                await plan(db, now, key=f"task:{task_id}:due", kind=DUE, user_id=user_id, task_id=task_id,
                           slot_at=due_at)
        coming = (
            await db.execute(
                select(Task.id, Task.user_id, Task.due_at)
                .where(
                    Task.done.is_(False),
                    Task.reminder_sent_at.is_(None),
                    Task.lead_reminder_sent_at.is_(None),
                    and_(Task.due_at > now, Task.due_at <= now + lead),
                )
                .order_by(Task.due_at)
                .limit(_BATCH)
            )
        ).all()
        for task_id, user_id, due_at in coming:
            assert due_at is not None  # the query's bounds on due_at leave NULL out
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
            if rowcount(result) == 1:
                await plan(db, now, key=f"task:{task_id}:lead", kind=LEAD, user_id=user_id, task_id=task_id,
                           slot_at=due_at)
        await db.commit()


def _user_text(user: User, task: Task, kind: str, tz: ZoneInfo, now: datetime) -> str:
    assert task.due_at is not None
    when = local_time(task.due_at, tz)
    if kind == LEAD:
        minutes = max(1, round((task.due_at - now).total_seconds() / 60))
        if user.language == "en":
            return (
                f"⏰ Reminder: “{task.title}” is due at {when} (in {minutes} min). "
                "Reply TASKS for your tasks."
            )
        return (
            f"⏰ Rappel : « {task.title} » est prévu à {when} (dans {minutes} min). "
            "TACHES : la liste."
        )
    if user.language == "en":
        return f"⏰ It's time: “{task.title}” ({when}). Reply DONE n once done (TASKS for the list)."
    return (
        f"⏰ C'est l'heure : « {task.title} » ({when}). FAIT n une fois fait (TACHES : la liste)."
    )


async def _render_reminder(services: Services, db: AsyncSession, row: ScheduledSend,
                           now: datetime) -> Outgoing | None:
    task = await db.get(Task, row.task_id) if row.task_id is not None else None
    user = await db.get(User, row.user_id)
    if task is None or user is None or task.done or task.due_at is None:
        return None
    if row.kind == LEAD and task.due_at <= now:
        return None  # retried until the due time: the due reminder says it now
    tz = zone(user.timezone, services.settings.default_timezone)
    return Outgoing(user=user, text=_user_text(user, task, row.kind, tz, now), kind="reminder")


async def send_due_reminders(services: Services, now: datetime | None = None) -> int:
    """The scheduler job: plans the reminders that are due and sends those planned and not yet sent
    (first tries and retries); returns how many Twilio accepted."""
    now = now or services.clock()
    await _plan_reminders(services, now)
    # A reminder is about its moment: SEND_MAX_AGE_S after it, it is dropped, not sent late.
    return await deliver_due(services, now, {LEAD: _render_reminder, DUE: _render_reminder},
                             timely=frozenset({LEAD, DUE}))


# --- the parents' daily digest ----------------------------------------------------------------------

DIGEST = "parent_digest"
# A digest goes out from PARENT_DIGEST_HOUR until this long after it (never at night); a parent whose
# children have nothing due or overdue that day gets nothing.
DIGEST_SEND_WINDOW = timedelta(hours=15)
DIGEST_MAX_ITEMS = 5
DIGEST_TITLE_MAX = 40
_DAY = timedelta(days=1)


def digest_slot(now: datetime, hour: int, tz: ZoneInfo) -> datetime:
    """The start of the parent's digest day: the latest PARENT_DIGEST_HOUR (local) at or before now."""
    local = now.astimezone(tz)
    slot = local.replace(hour=hour, minute=0, second=0, microsecond=0)
    if slot > local:
        slot -= _DAY
    return slot.astimezone(now.tzinfo)


@dataclass
class ChildTasks:
    name: str
    tasks: list[Task]


async def digest_tasks(db: AsyncSession, parent_id: int, slot: datetime) -> list[ChildTasks]:
    """Per confirmed child: open tasks due that digest day, or the day before and still not done."""
    children = (
        await db.scalars(
            select(User)
            .join(ParentLink, ParentLink.student_id == User.id)
            .where(ParentLink.parent_id == parent_id, ParentLink.status == "confirmed")
            .order_by(ParentLink.id)
        )
    ).all()
    found: list[ChildTasks] = []
    for child in children:
        rows = list(
            await db.scalars(
                select(Task)
                .where(Task.user_id == child.id, Task.done.is_(False),
                       Task.due_at >= slot - _DAY, Task.due_at < slot + _DAY)
                .order_by(Task.due_at, Task.id)
            )
        )
        if rows:
            found.append(ChildTasks(child.display_name or child.phone or "?", rows))
    return found


def digest_text(parent: User, children: list[ChildTasks], tz: ZoneInfo, now: datetime) -> str:
    language = parent.language
    shown, left = 0, sum(len(c.tasks) for c in children)
    parts: list[str] = []
    for child in children:
        items: list[str] = []
        for task in child.tasks[: max(0, DIGEST_MAX_ITEMS - shown)]:
            assert task.due_at is not None
            title = task.title
            if len(title) > DIGEST_TITLE_MAX:
                title = title[: DIGEST_TITLE_MAX - 1] + "…"
            if task.due_at < now:
                items.append(f"{title} ({fr_en(language, 'pas encore fait', 'not done yet')})")
            else:
                items.append(f"{task.due_at.astimezone(tz):%H:%M} {title}")
        shown += len(items)
        if items:
            parts.append(fr_en(language, f"{child.name} : {' ; '.join(items)}",
                               f"{child.name}: {'; '.join(items)}"))
    more = left - shown
    if language == "en":
        extra = f" (+{more} more, reply CHILDREN)" if more > 0 else ""
        return f"Deblo, today's tasks. {'. '.join(parts)}{extra}. {stop_line('en')}"
    extra = f" (+{more} autres, répondez ENFANTS)" if more > 0 else ""
    return f"Deblo, les tâches du jour. {'. '.join(parts)}{extra}. {stop_line('fr')}"


async def _plan_digests(services: Services, now: datetime) -> None:
    """Plans today's digest for each parent whose confirmed children have tasks due around now."""
    settings = services.settings
    async with services.sessions() as db:
        candidates = (
            await db.execute(
                select(User.id, User.timezone)
                .distinct()
                .join(ParentLink, ParentLink.parent_id == User.id)
                .join(Task, Task.user_id == ParentLink.student_id)
                .where(ParentLink.status == "confirmed", User.opted_out.is_(False), Task.done.is_(False),
                       Task.due_at >= now - 2 * _DAY, Task.due_at < now + _DAY)
            )
        ).all()
        wanted: dict[str, tuple[int, datetime]] = {}
        for parent_id, tz_name in candidates:
            tz = zone(tz_name, settings.default_timezone)
            slot = digest_slot(now, settings.parent_digest_hour, tz)
            if now - slot < DIGEST_SEND_WINDOW:
                wanted[f"digest:{parent_id}:{slot.astimezone(tz):%Y-%m-%d}"] = (parent_id, slot)
        if not wanted:
            return
        known = set(await db.scalars(select(ScheduledSend.key).where(ScheduledSend.key.in_(list(wanted)))))
        for key, (parent_id, slot) in wanted.items():
            if key not in known and await digest_tasks(db, parent_id, slot):
                await plan(db, now, key=key, kind=DIGEST, user_id=parent_id, slot_at=slot)
        await db.commit()


async def _render_digest(services: Services, db: AsyncSession, row: ScheduledSend,
                         now: datetime) -> Outgoing | None:
    parent = await db.get(User, row.user_id)
    if parent is None:
        return None
    children = await digest_tasks(db, parent.id, row.slot_at)
    if not children:
        return None  # all done (or unlinked) since it was planned
    tz = zone(parent.timezone, services.settings.default_timezone)
    return Outgoing(user=parent, text=digest_text(parent, children, tz, now), kind="parent_digest")


async def send_parent_digests(services: Services, now: datetime | None = None) -> int:
    """At most one message a day to each parent about their children's tasks; returns how many went."""
    now = now or services.clock()
    await _plan_digests(services, now)
    return await deliver_due(services, now, {DIGEST: _render_digest})


REMINDER_INTERVAL_S = 30.0


async def _reminder_tick(services: Services, now: datetime) -> None:
    await send_due_reminders(services, now)


async def _digest_tick(services: Services, now: datetime) -> None:
    await send_parent_digests(services, now)


def reminder_jobs(interval_s: float = REMINDER_INTERVAL_S) -> list[Job]:
    """The periodic jobs bot/cli.py registers: every worker runs them, each send is claimed once."""
    return [
        Job(name="task_reminders", interval_s=interval_s, fn=_reminder_tick),
        Job(name="parent_digests", interval_s=interval_s, fn=_digest_tick),
    ]
