"""A distress flag raised on a child's message (bot.storage.models.SafetyFlag), once.

One open flag per child and category: while a person has not acknowledged it, the same words
again (a second message, a webhook Twilio retried, a message run again after a crash) raise no
other flag and no other e-mail; the person who opens the flag sees the child, and that is what
matters. Once acknowledged, a new message raises a new flag.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.storage.models import GENTLE_S, SafetyFlag, gentle_flag
from bot.texts import fr_en

__all__ = ["EXCERPT_MAX", "GENTLE_S", "OpenFlags", "gentle", "how_long", "open_among", "open_flags",
           "open_line", "raise_flag"]

EXCERPT_MAX = 500  # characters of the message kept for admins
# After distress the bot is gentle with the child: no review offer, no quiz, no nudge, no credit
# notice, as long as a flag is open and for GENTLE_S after one (the rule, `gentle_flag`, lives
# beside the table: bot.learning's sends select by it too).


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


GENTLE = "safety.gentle"  # msg.extra: `gentle` as the hold's look read it (handlers/hold.py)


async def gentle(db: AsyncSession, user_id: int, now: datetime, known: bool | None = None) -> bool:
    """Whether the bot is gentle with this child now: a flag is open, or one was raised within
    GENTLE_S (a person may have acknowledged it in a minute; the child's day is still that day).
    `known`: the answer the message's one read of the child's flags gave (`hold.held_flag`),
    after the distress check raised this message's flag; None: read here."""
    if known is not None:
        return known
    found = await db.scalar(select(SafetyFlag.id).where(
        SafetyFlag.user_id == user_id, gentle_flag(now)).limit(1))
    return found is not None


@dataclass(frozen=True)
class OpenFlags:
    """The open flags of a set of students, as adults who are not shown the words see them."""

    count: int
    oldest: datetime | None  # when the oldest of them was raised


async def open_among(db: AsyncSession, students: Select[Any] | None) -> OpenFlags:
    """How many flags are open among `students` (a subquery of user ids; None: everyone), and
    since when the oldest."""
    query = select(func.count(SafetyFlag.id), func.min(SafetyFlag.created_at)).where(
        SafetyFlag.acknowledged_at.is_(None))
    if students is not None:
        query = query.where(SafetyFlag.user_id.in_(students))
    count, oldest = (await db.execute(query)).one()
    return OpenFlags(int(count or 0), oldest)


def how_long(seconds: float, language: str) -> str:
    """« 3 jours », « 5 heures », « 20 minutes »: hours up to two days, so that « 1 jour » does not
    hide that a flag has been open for 47 hours."""
    minutes = max(int(seconds // 60), 1)
    n, fr, en = ((minutes // 1440, "jour", "day") if minutes >= 2880
                 else (minutes // 60, "heure", "hour") if minutes >= 60 else (minutes, "minute", "minute"))
    plural = "s" if n > 1 else ""
    return fr_en(language, f"{n} {fr}{plural}", f"{n} {en}{plural}")


def open_line(found: OpenFlags, now: datetime, language: str) -> str:
    """« 2 alertes ouvertes, la plus ancienne il y a 3 jours »: the count and the age of the
    oldest, never a word of the messages; "" when none is open."""
    if not found.count or found.oldest is None:
        return ""
    age = how_long((now - found.oldest).total_seconds(), language)
    if found.count == 1:
        return fr_en(language, f"1 alerte ouverte, il y a {age}", f"1 open alert, raised {age} ago")
    return fr_en(language, f"{found.count} alertes ouvertes, la plus ancienne il y a {age}",
                 f"{found.count} open alerts, the oldest raised {age} ago")
