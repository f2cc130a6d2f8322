"""A distress flag raised on a child's message (bot.storage.models.SafetyFlag), once.

One open flag per child and category: while a person has not acknowledged it, the same words
again (a second message, a webhook Twilio retried, a message run again after a crash) raise no
other flag and no other e-mail; the person who opens the flag sees the child, and that is what
matters. Once acknowledged, a new message raises a new flag.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.storage.models import SafetyFlag

__all__ = ["EXCERPT_MAX", "GENTLE_S", "gentle", "open_flags", "raise_flag"]

EXCERPT_MAX = 500  # characters of the message kept for admins
# After distress the bot is gentle with the child: no review offer, no quiz, no nudge, no credit
# notice, for this long after a flag and as long as one is open (bot.learning's nudges keep the
# same rule in their query).
GENTLE_S = 24 * 3600


async def raise_flag(db: AsyncSession, *, user_id: int, category: str, source: str, text: str,
                     now: datetime) -> SafetyFlag | None:
    """The new flag (flushed), or None when one of this category is still open for this child."""
    already = await db.scalar(select(SafetyFlag.id).where(
        SafetyFlag.user_id == user_id, SafetyFlag.category == category,
        SafetyFlag.acknowledged_at.is_(None)).limit(1))
    if already is not None:
        return None
    flag = SafetyFlag(user_id=user_id, category=category, source=source, excerpt=text[:EXCERPT_MAX],
                      created_at=now)
    db.add(flag)
    await db.flush()
    return flag


async def open_flags(db: AsyncSession, user_id: int) -> int:
    """How many flags of this child no person has acknowledged yet."""
    count = await db.scalar(select(func.count(SafetyFlag.id)).where(
        SafetyFlag.user_id == user_id, SafetyFlag.acknowledged_at.is_(None)))
    return int(count or 0)


async def gentle(db: AsyncSession, user_id: int, now: datetime) -> bool:
    """Whether the bot is gentle with this child now: a flag is open, or one was raised within
    GENTLE_S (a person may have acknowledged it in a minute; the child's day is still that day)."""
    found = await db.scalar(select(SafetyFlag.id).where(
        SafetyFlag.user_id == user_id,
        SafetyFlag.acknowledged_at.is_(None) | (SafetyFlag.created_at > now - timedelta(seconds=GENTLE_S)),
    ).limit(1))
    return found is not None
