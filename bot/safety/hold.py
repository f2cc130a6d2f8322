"""A person of the school follows a flag up: they hold the child's conversation and write to the
child through the bot's number.

While a person holds it (`SafetyFlag.held_by`, `held_at`), the tutor does not answer the child
(handlers/hold.py): the child's messages are kept in the conversation for the person to read, and
the child is told once that a person reads them. The hold starts when the person takes the
conversation or writes, each of their messages renews it, and it ends when they hand it back or
HUMAN_HOLD_S after their last message (seen when the child next writes: nothing runs meanwhile).

A person writes only within 24 hours of the child's last message: WhatsApp's rule for free-form
messages, kept on SMS too so that a school never writes to a child out of the blue. Their message
starts with a line saying it comes from a person of the school, goes out through the normal
outbound path, and counts as sent only when Twilio accepted it. Every step is recorded
(`SafetyFlagEvent`), reading the child's messages included.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel.outbound import SendKeys, SendResult, in_whatsapp_window, send_to_user, sending
from bot.services import Services
from bot.storage.models import (
    Conversation,
    Message,
    OutboundMessage,
    SafetyFlag,
    SafetyFlagEvent,
    User,
    gentle_flag,
)
from bot.texts import fr_en

log = logging.getLogger(__name__)

__all__ = ["KIND", "REPLY_MAX", "WINDOW", "Person", "held_flag", "hold_live", "hold_notice", "may_write",
           "record", "release", "school_text", "take", "write_to_child"]

KIND = "school"  # the outbound kind of a person's message: never queued, sent now or refused
REPLY_MAX = 1000  # characters a person writes at once (one WhatsApp message with its first line)
WINDOW = timedelta(hours=24)
NOTE_NAME = "school"  # Message.name of a person's message kept in the conversation


@dataclass(frozen=True)
class Person:
    """The operator who acts: their id and e-mail (kept in the record beside the id)."""

    operator_id: int
    email: str


def hold_live(flag: SafetyFlag, now: datetime, hold_s: int) -> bool:
    return flag.held_at is not None and now - flag.held_at < timedelta(seconds=hold_s)


def hold_notice(language: str | None) -> str:
    return fr_en(language, "Une personne de l'école lit tes messages et te répond bientôt.",
                 "A person from your school is reading your messages and will answer you soon.")


def school_text(language: str | None, text: str) -> str:
    """What the child reads: a first line saying who writes, then the person's words."""
    first = fr_en(language, "Message d'une personne de l'école :", "Message from a person at your school:")
    return f"{first}\n{text}"


def may_write(services: Services, user: User) -> bool:
    """Whether a person may write to the child now: within 24 h of the child's last message on the
    channel they last used (WhatsApp's window; the same on SMS)."""
    if (user.last_channel or "whatsapp") == "whatsapp":
        return in_whatsapp_window(services, user)
    last = user.last_inbound_at
    return last is not None and services.clock() - last < WINDOW


def record(db: AsyncSession, flag_id: int, action: str, person: Person | None, now: datetime,
           detail: str = "") -> None:
    db.add(SafetyFlagEvent(flag_id=flag_id, operator_id=person.operator_id if person else None,
                           operator_email=person.email if person else "", action=action,
                           detail=detail[:200], created_at=now))


async def _note(db: AsyncSession, user_id: int, content: str, now: datetime, name: str | None = None) -> None:
    """A line in the child's latest conversation, which the tutor reads as context (a system note)."""
    conversation_id = await db.scalar(select(Conversation.id).where(Conversation.user_id == user_id)
                                      .order_by(Conversation.active.desc(), Conversation.id.desc()).limit(1))
    if conversation_id is not None:
        db.add(Message(conversation_id=conversation_id, role="note", name=name, content=content,
                       created_at=now))


def _hold(flag: SafetyFlag, person: Person, now: datetime, hold_s: int) -> None:
    if not hold_live(flag, now, hold_s):  # a new hold: the child will be told again
        flag.hold_told_at = None
    flag.held_by, flag.held_at = person.operator_id, now


def take(db: AsyncSession, flag: SafetyFlag, person: Person, now: datetime, hold_s: int) -> None:
    """The person holds the conversation from now (from another person too)."""
    _hold(flag, person, now, hold_s)
    record(db, flag.id, "take", person, now)


async def release(db: AsyncSession, flag: SafetyFlag, person: Person | None, now: datetime) -> None:
    """The tutor answers the child again: by the person (`release`) or when the hold lapsed
    (`expire`, no person). The tutor is told what happened in between."""
    flag.held_by = flag.held_at = flag.hold_told_at = None
    record(db, flag.id, "release" if person else "expire", person, now)
    await _note(db, flag.user_id, (
        "[A person of the school held this conversation: the child's messages since were read by "
        "that person, who may have written to the child (their messages are noted above). You answer "
        "the child again now, as a caring tutor; do not answer again what the person answered.]"), now)


async def held_flag(db: AsyncSession, user_id: int, now: datetime,
                    hold_s: int) -> tuple[SafetyFlag | None, bool]:
    """The flag whose person holds this child's conversation now, else None, and whether the day
    is gentle (`flags.gentle`), both from one read of the child's flags. Holds that lapsed are
    ended here (flushed with the caller's transaction)."""
    rows = (await db.execute(select(SafetyFlag, gentle_flag(now))
                             .where(SafetyFlag.user_id == user_id,
                                    SafetyFlag.held_at.is_not(None) | gentle_flag(now)))).all()
    held = [(flag.held_at, flag.id, flag) for flag, _ in rows if flag.held_at is not None]
    flags = [flag for _, _, flag in sorted(held, key=lambda h: (h[0], h[1]), reverse=True)]
    live = None
    for flag in flags:
        if hold_live(flag, now, hold_s):
            live = live or flag
        else:
            await release(db, flag, None, now)
            log.info("hold lapsed", extra={"user_id": user_id, "flag_id": flag.id})
    return live, any(bool(gentle) for _, gentle in rows)


@dataclass(frozen=True)
class Written:
    """What became of a person's message: `sent` only when Twilio accepted it; else `reason`
    (window_closed, already, gone, or a SendResult's reason)."""

    sent: bool
    reason: str | None = None


async def write_to_child(services: Services, flag_id: int, person: Person, text: str, key: str) -> Written:
    """Sends the person's `text` to the flag's child, once per `key` (the form's own: a form sent
    twice sends once). A message Twilio accepted renews the person's hold and is kept in the
    conversation; every attempt is recorded."""
    now = services.clock()
    async with services.sessions() as db:
        flag = await db.get(SafetyFlag, flag_id)
        user = await db.get(User, flag.user_id) if flag is not None else None
        if flag is None or user is None:
            return Written(False, "gone")
        done = (await db.execute(select(OutboundMessage.sid).where(
            OutboundMessage.idempotency_key == f"{key}:0"))).first()
        if done is not None:  # this very form was sent before: its first attempt is the answer
            return Written(True, "already") if done.sid else Written(False, "failed")
        if not may_write(services, user):
            record(db, flag.id, "reply", person, now, "window_closed")
            await db.commit()
            return Written(False, "window_closed")
    sent = school_text(user.language, text)
    with sending(inbound=None, session=None, keys=SendKeys(key)):
        result = await send_to_user(services, user, text=sent, kind=KIND)
    await _after(services, flag_id, person, sent, result)
    return Written(True) if result.accepted else Written(False, result.reason or "failed")


async def _after(services: Services, flag_id: int, person: Person, sent: str, result: SendResult) -> None:
    now, hold_s = services.clock(), services.settings.safety.human_hold_s
    async with services.sessions() as db, db.begin():
        flag = await db.get(SafetyFlag, flag_id)
        if flag is None:
            return
        if not result.accepted:
            record(db, flag.id, "reply", person, now, result.reason or "failed")
            return
        _hold(flag, person, now, hold_s)
        record(db, flag.id, "reply", person, now, "sent")
        await _note(db, flag.user_id, sent, now, name=NOTE_NAME)
    log.info("a person wrote to the child", extra={"flag_id": flag_id, "operator_id": person.operator_id})
