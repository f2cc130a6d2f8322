"""One flag's page: the child's messages around it, who holds the conversation, what people did,
and the forms to write to the child, take the conversation or hand it back (bot.safety.hold).

Who may open it: admins, and the teachers of the child's classes when SAFETY_TEACHERS_MAY_REPLY is
true. Anyone else (a teacher without the setting, or of another class) gets what a flag that does
not exist gets: None here, 404 on the page and on every POST. Every time the page shows the
child's messages, the read is recorded with who and when.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot import safety
from bot.config import Settings
from bot.services import Services
from bot.storage.models import Conversation, Message, Operator, SafetyFlag, SafetyFlagEvent, User
from bot.web.admin.auth import Viewer
from bot.web.admin.flags import flag_in_scope

BEFORE = timedelta(hours=24)  # the messages shown start this long before the flag
MAX_LINES = 300  # the most recent, when a child wrote more
MAX_EVENTS = 100
SCHOOL = "school"  # Message.name of a person's message (bot.safety.hold)


@dataclass(frozen=True)
class Line:
    who: str  # child | bot | school
    text: str
    at: datetime


@dataclass(frozen=True)
class Event:
    at: datetime
    email: str
    action: str  # read | take | reply | release | expire
    detail: str


@dataclass(frozen=True)
class FlagPage:
    id: int
    student: str
    category: str
    created_at: datetime
    excerpt: str
    acknowledged_at: datetime | None
    held_by: str | None  # the e-mail of who holds it now, "" for a removed operator; None: the tutor answers
    held_until: datetime | None
    writable: bool  # the child wrote within 24 h
    lines: list[Line]
    events: list[Event]


def may_follow(viewer: Viewer, settings: Settings) -> bool:
    """Whether this viewer's role lets them open flags at all."""
    return viewer.is_admin or (viewer.role == "teacher" and settings.safety.safety_teachers_may_reply)


async def flag_for(db: AsyncSession, viewer: Viewer, settings: Settings, flag_id: int) -> SafetyFlag | None:
    """The flag, when this viewer may follow it up; else None, as for a flag that does not exist."""
    return await flag_in_scope(db, viewer, flag_id) if may_follow(viewer, settings) else None


def person(viewer: Viewer) -> safety.Person:
    return safety.Person(viewer.operator_id, viewer.email)


async def _lines(db: AsyncSession, user_id: int, since: datetime) -> list[Line]:
    """The child's messages and the tutor's and the school's answers since `since`, oldest first."""
    shown = or_(Message.role.in_(("user", "assistant")), and_(Message.role == "note", Message.name == SCHOOL))
    rows = (await db.execute(
        select(Message.role, Message.content, Message.created_at)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(Conversation.user_id == user_id, Message.created_at >= since, shown,
               Message.content.is_not(None), Message.content != "")
        .order_by(Message.id.desc()).limit(MAX_LINES))).all()
    who = {"user": "child", "assistant": "bot", "note": "school"}
    return [Line(who[role], content or "", at) for role, content, at in reversed(rows)]


async def _events(db: AsyncSession, flag_id: int) -> list[Event]:
    rows = (await db.scalars(select(SafetyFlagEvent).where(SafetyFlagEvent.flag_id == flag_id)
                             .order_by(SafetyFlagEvent.id.desc()).limit(MAX_EVENTS))).all()
    return [Event(e.created_at, e.operator_email, e.action, e.detail) for e in rows]


async def page(db: AsyncSession, services: Services, flag: SafetyFlag) -> FlagPage:
    now, hold_s = services.clock(), services.settings.safety.human_hold_s
    user = await db.get(User, flag.user_id)
    assert user is not None  # the flag goes with its child (ON DELETE CASCADE)
    held_by: str | None = None
    if safety.hold_live(flag, now, hold_s):
        held_by = (await db.scalar(select(Operator.email).where(Operator.id == flag.held_by))) or ""
    until = flag.held_at + timedelta(seconds=hold_s) if held_by is not None and flag.held_at else None
    return FlagPage(
        id=flag.id, student=user.display_name or f"#{user.id}", category=flag.category,
        created_at=flag.created_at, excerpt=flag.excerpt, acknowledged_at=flag.acknowledged_at,
        held_by=held_by, held_until=until, writable=safety.may_write(services, user),
        lines=await _lines(db, flag.user_id, flag.created_at - BEFORE), events=await _events(db, flag.id))


def read(db: AsyncSession, flag_id: int, viewer: Viewer, now: datetime) -> None:
    """Records that this viewer was shown the child's messages (in the page's transaction)."""
    safety.record(db, flag_id, "read", person(viewer), now)
