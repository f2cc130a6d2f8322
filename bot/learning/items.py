"""The quiz items a student has to review: due ones first, else the ones most recently missed."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.storage.models import QuizItem


async def due_count(db: AsyncSession, user_id: int, now: datetime) -> int:
    return int(await db.scalar(select(func.count()).select_from(QuizItem).where(
        QuizItem.user_id == user_id, QuizItem.due_at.is_not(None), QuizItem.due_at <= now)) or 0)


async def due_items(db: AsyncSession, user_id: int, now: datetime, limit: int) -> list[QuizItem]:
    """Due items, the longest overdue first."""
    rows = await db.scalars(select(QuizItem).where(
        QuizItem.user_id == user_id, QuizItem.due_at.is_not(None), QuizItem.due_at <= now,
    ).order_by(QuizItem.due_at, QuizItem.id).limit(limit))
    return list(rows)


async def recently_missed(db: AsyncSession, user_id: int, limit: int) -> list[QuizItem]:
    """Items whose last answer was wrong, the most recent first (for a review when nothing is due)."""
    rows = await db.scalars(select(QuizItem).where(
        QuizItem.user_id == user_id, QuizItem.last_correct.is_(False),
    ).order_by(QuizItem.last_answered_at.desc(), QuizItem.id.desc()).limit(limit))
    return list(rows)
