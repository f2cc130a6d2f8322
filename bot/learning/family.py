"""What a parent's tutor knows of their children: the prompt's block for a user with role "parent".

Per child linked by a confirmed ParentLink (and only those: the same check as ENFANTS): the name,
the class, the skills to work on (checked answers, as the weekly summary's), what is due (open
tasks of the coming week, REVISION items), the last seven days' checked answers per subject and
the teachers' open assignments. It reuses the parents' summary data (bot.learning.progress,
bot.learning.assigned) rather than reading anything of its own, and never the child's
conversations: the tutor is told the figures a parent may see, nothing the child wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.config_groups import Learning
from bot.learning.assigned import homework_line
from bot.learning.items import due_count
from bot.learning.profile import skill_views, subject_name, to_work_on
from bot.learning.progress import student_name, subject_stats
from bot.storage.models import ParentLink, Task, User

__all__ = ["FAMILY_HEADING", "FAMILY_MAX_BYTES", "MAX_CHILDREN", "ChildFacts", "child_line", "family_block",
           "family_text"]

FAMILY_HEADING = "# Ses enfants (suivi confirmé ; réponses vérifiées, jamais leurs conversations)"
# Per-user data after the cached prefix, like the learner block: every byte is paid at every call.
FAMILY_MAX_BYTES = 900
CHILD_MAX_BYTES = 400
MAX_CHILDREN = 4
TASKS_AHEAD = timedelta(days=7)
WEAK_SHOWN = 3


@dataclass(frozen=True)
class ChildFacts:
    """One child as the block shows them (plain values, so that the bench can build the worst case)."""

    name: str
    level: str | None
    weak: tuple[str, ...]  # the skills to work on, the weakest first
    week: tuple[str, ...]  # « Maths 3/4 »: the last seven days' checked answers per subject
    tasks: int  # open tasks due within TASKS_AHEAD (or overdue)
    review: int  # REVISION items due
    homework: str  # the teachers' assignments (bot.learning.assigned.homework_line)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fit(line: str, limit: int) -> str:
    """`line` cut to `limit` bytes (on a character), « … » when cut."""
    raw = line.encode()
    if len(raw) <= limit:
        return line
    return raw[: limit - 3].decode(errors="ignore") + "…"


def child_line(child: ChildFacts) -> str:
    """« - Awa (4e) : à travailler fractions, géométrie ; 7 jours : Maths 3/4 ; à faire : 2 tâches,
    1 question à revoir ; Devoirs : fractions pas commencé. »"""
    parts = [f"- {_clip(child.name, 40)}" + (f" ({_clip(child.level, 30)})" if child.level else "")]
    details = []
    if child.weak:
        details.append("à travailler " + ", ".join(_clip(w, 30) for w in child.weak))
    details.append("7 jours : " + (", ".join(child.week) if child.week else "aucun exercice"))
    due = []
    if child.tasks:
        due.append(f"{child.tasks} tâche{'s' if child.tasks > 1 else ''}")
    if child.review:
        due.append(f"{child.review} question{'s' if child.review > 1 else ''} à revoir")
    if due:
        details.append("à faire : " + ", ".join(due))
    if child.homework:
        details.append(child.homework.rstrip("."))
    return _fit(parts[0] + " : " + " ; ".join(details), CHILD_MAX_BYTES)


def family_text(children: list[ChildFacts]) -> str:
    """The block, at most FAMILY_MAX_BYTES; "" without a confirmed child (the parent is then told
    nothing of any child, and the prompt says how to link one)."""
    if not children:
        return ""
    lines = [FAMILY_HEADING]
    used = len(FAMILY_HEADING.encode())
    for n, child in enumerate(children[:MAX_CHILDREN]):
        line = child_line(child)
        if used + len(line.encode()) + 1 > FAMILY_MAX_BYTES - 8:
            lines.append(f"- (+{len(children) - n})")
            break
        lines.append(line)
        used += len(line.encode()) + 1
    return "\n".join(lines)


async def _facts(db: AsyncSession, learning: Learning, child: User, now: datetime) -> ChildFacts:
    stats = await subject_stats(db, child.id, now)
    week = [f"{subject_name(s.subject, 'fr')} {s.last7_correct}/{s.last7_total}"
            for s in stats if s.last7_total]
    weak = tuple(s.shown("fr") for s in to_work_on(await skill_views(db, child.id, learning), WEAK_SHOWN))
    tasks = int(await db.scalar(select(func.count()).select_from(Task).where(
        Task.user_id == child.id, Task.done.is_(False), Task.due_at.is_not(None),
        Task.due_at < now + TASKS_AHEAD)) or 0)
    return ChildFacts(student_name(child, "fr"), child.school_level, weak, tuple(week[:4]), tasks,
                      await due_count(db, child.id, now), await homework_line(db, child.id, now, "fr"))


async def family_block(db: AsyncSession, learning: Learning, parent_id: int, now: datetime) -> str:
    """The block of `parent_id`'s confirmed children, in the order they were linked."""
    children = (await db.scalars(
        select(User).join(ParentLink, ParentLink.student_id == User.id)
        .where(ParentLink.parent_id == parent_id, ParentLink.status == "confirmed")
        .order_by(ParentLink.id).limit(MAX_CHILDREN + 1))).all()
    return family_text([await _facts(db, learning, child, now) for child in children])
