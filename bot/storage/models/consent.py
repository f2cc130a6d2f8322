"""A minor's consent to be tutored (CONSENT_MODE, bot.accounts.consent): given by a parent's OUI to
the link a child asked for (`given_by_id` the parent, `channel` whatsapp or sms) or by the school
when it imports the class (`channel` school, no parent row). Both foreign keys cascade, and
`users forget` deletes every row pointing at the person anyway: forgetting the child or the parent
who gave it leaves nothing of it."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from bot.storage.models.base import PK, Base, utcnow
from bot.storage.models.tables import InboundMessage, User


class Consent(Base):
    __tablename__ = "consents"
    __table_args__ = (Index("ix_consents_student", "student_id"),
                      Index("ix_consents_given_by", "given_by_id"))

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    student_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    given_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    # Who, as `users show` prints it: the parent's number, or the school and the class.
    given_by: Mapped[str] = mapped_column(String(200))
    channel: Mapped[str] = mapped_column(String(16))  # whatsapp | sms | school
    given_at: Mapped[datetime] = mapped_column(default=utcnow)


async def consent_lacking(db: AsyncSession, user: User, mode: str, grace: int) -> bool:
    """The one rule of CONSENT_MODE: True when this user may not be tutored nor written to first, a
    child (mode child, not a parent nor a pro) past `grace` messages with no consent on record. Every
    message they wrote counts, so that a child cannot start the grace over. Read by the message path
    (bot.accounts.consent) and by every send the bot starts itself (bot.channel.scheduled)."""
    if mode == "none" or user.mode != "child" or user.role in ("parent", "pro"):
        return False
    if await db.scalar(select(Consent.id).where(Consent.student_id == user.id).limit(1)) is not None:
        return False
    mine = select(InboundMessage.id).where(InboundMessage.user_id == user.id).limit(grace + 1)
    return int(await db.scalar(select(func.count()).select_from(mine.subquery())) or 0) > grace
