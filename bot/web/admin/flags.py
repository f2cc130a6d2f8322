"""The open safety flags on the dashboard, each acknowledged by a person. An admin sees every flag
with its excerpt; a teacher sees the flags of their classes' students (who, what kind, when) and
never the words of the message."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.storage.models import SafetyFlag, User
from bot.web.admin.auth import Viewer
from bot.web.admin.queries import students_of

MAX_SHOWN = 200


@dataclass(frozen=True)
class FlagView:
    id: int
    user_id: int
    student: str
    category: str
    created_at: datetime
    excerpt: str | None  # None for a teacher


async def open_flags(db: AsyncSession, viewer: Viewer) -> list[FlagView]:
    query = (select(SafetyFlag, User.display_name).join(User, User.id == SafetyFlag.user_id)
             .where(SafetyFlag.acknowledged_at.is_(None))
             .order_by(SafetyFlag.created_at.desc(), SafetyFlag.id.desc()).limit(MAX_SHOWN))
    scope = students_of(viewer)
    if scope is not None:
        query = query.where(SafetyFlag.user_id.in_(scope))
    return [FlagView(f.id, f.user_id, name or f"#{f.user_id}", f.category, f.created_at,
                     f.excerpt if viewer.is_admin else None)
            for f, name in (await db.execute(query)).all()]


async def flag_in_scope(db: AsyncSession, viewer: Viewer, flag_id: int) -> SafetyFlag | None:
    """The flag, when it is of a student the viewer sees; else None, as for one that does not exist."""
    flag = await db.get(SafetyFlag, flag_id)
    if flag is None:
        return None
    scope = students_of(viewer)
    if scope is not None and await db.scalar(select(User.id).where(
            User.id == flag.user_id, User.id.in_(scope))) is None:
        return None
    return flag


async def acknowledge(db: AsyncSession, viewer: Viewer, flag_id: int, now: datetime) -> bool:
    """Marks the flag seen by this operator; False when it does not exist or is outside the scope.
    A flag acknowledged already keeps who did it first."""
    flag = await flag_in_scope(db, viewer, flag_id)
    if flag is None:
        return False
    if flag.acknowledged_at is None:
        flag.acknowledged_at, flag.acknowledged_by = now, viewer.operator_id
    return True
