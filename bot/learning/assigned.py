"""A teacher's assignments as the student's family reads them: the due date in the reader's words
(« mar. 10 mars ») and one line of how each recent assignment went (« Devoirs : fractions 2/2 »),
for ENFANTS and the parents' weekly SMS. Kept here, not in bot.school, because the weekly summary
(bot.learning.progress) shows it and the learner's package never imports the school's."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.storage.models import Assignment, AssignmentWork
from bot.texts import fr_en

__all__ = ["due_text", "homework_line", "work_score"]

_DAYS_FR = ("lun.", "mar.", "mer.", "jeu.", "ven.", "sam.", "dim.")
_MONTHS_FR = ("janv.", "févr.", "mars", "avr.", "mai", "juin", "juil.", "août", "sept.", "oct.", "nov.",
              "déc.")
_DAYS_EN = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS_EN = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
RECENT = timedelta(days=14)  # what a parent hears of: set in the last two weeks, or still open
LINE_MAX = 3  # assignments on the SMS's line (ENFANTS shows them as well)
LABEL_MAX = 24


def due_text(day: date, language: str) -> str:
    """« mar. 10 mars » (French) or « Tue 10 Mar » (English): no year, the assignment is near."""
    if language == "en":
        return f"{_DAYS_EN[day.weekday()]} {day.day} {_MONTHS_EN[day.month - 1]}"
    return f"{_DAYS_FR[day.weekday()]} {day.day} {_MONTHS_FR[day.month - 1]}"


def work_score(work: AssignmentWork, language: str) -> str:
    """« 2/2 » once finished; « 1/2 (en cours) » started; « pas commencé » not yet."""
    if work.finished_at is not None:
        return f"{work.correct}/{work.asked}"
    if work.started_at is not None:
        score = f"{work.correct}/{work.asked}"
        return fr_en(language, f"{score} (en cours)", f"{score} (in progress)")
    return fr_en(language, "pas commencé", "not started")


async def homework_line(db: AsyncSession, student_id: int, now: datetime, language: str) -> str:
    """« Devoirs : fractions 2/2, géométrie pas commencé. » or "" when none was set lately."""
    rows = (await db.execute(
        select(Assignment, AssignmentWork)
        .join(AssignmentWork, AssignmentWork.assignment_id == Assignment.id)
        .where(AssignmentWork.user_id == student_id,
               or_(Assignment.created_at > now - RECENT, AssignmentWork.finished_at.is_(None)))
        .order_by(Assignment.created_at.desc(), Assignment.id.desc()).limit(LINE_MAX))).all()
    if not rows:
        return ""
    parts = ", ".join(f"{a.skill_label[:LABEL_MAX]} {work_score(w, language)}" for a, w in rows)
    return fr_en(language, f"Devoirs : {parts}.", f"Homework: {parts}.")
