"""The quiz items a student has to review: due ones first, else the ones most recently missed; and
which wait to be taught again (bot.learning.reteach), never replayed as they are."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.storage.models import QuizItem

RETEACH_AFTER = 2  # misses in a row: the item is taught again, not asked again as it is


def to_reteach() -> ColumnElement[bool]:
    """SQL: the item waits to be taught again (missed RETEACH_AFTER times in a row, or retired and
    not yet replaced by a new question)."""
    replaced = QuizItem.retaught_at.is_not(None) & (QuizItem.retaught_at >= QuizItem.retired_at)
    return (QuizItem.miss_streak >= RETEACH_AFTER) | (QuizItem.retired_at.is_not(None) & ~replaced)


def needs_reteach(item: QuizItem) -> bool:
    """`to_reteach` for an item in hand."""
    if (item.miss_streak or 0) >= RETEACH_AFTER:
        return True
    return item.retired_at is not None and (item.retaught_at is None or item.retaught_at < item.retired_at)


async def due_count(db: AsyncSession, user_id: int, now: datetime) -> int:
    return int(await db.scalar(select(func.count()).select_from(QuizItem).where(
        QuizItem.user_id == user_id, QuizItem.due_at.is_not(None), QuizItem.due_at <= now)) or 0)


async def due_items(db: AsyncSession, user_id: int, now: datetime, limit: int, *,
                    replay_only: bool = False) -> list[QuizItem]:
    """Due items, the longest overdue first; with `replay_only`, not those waiting to be taught again."""
    query = select(QuizItem).where(QuizItem.user_id == user_id, QuizItem.due_at.is_not(None),
                                   QuizItem.due_at <= now)
    if replay_only:
        query = query.where(~to_reteach())
    rows = await db.scalars(query.order_by(QuizItem.due_at, QuizItem.id).limit(limit))
    return list(rows)


async def recently_missed(db: AsyncSession, user_id: int, limit: int) -> list[QuizItem]:
    """Items whose last answer was wrong, the most recent first (for a review when nothing is due);
    not those waiting to be taught again, nor the retired."""
    rows = await db.scalars(select(QuizItem).where(
        QuizItem.user_id == user_id, QuizItem.last_correct.is_(False), QuizItem.retired_at.is_(None),
        ~to_reteach(),
    ).order_by(QuizItem.last_answered_at.desc(), QuizItem.id.desc()).limit(limit))
    return list(rows)
