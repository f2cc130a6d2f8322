"""A minor's consent to be tutored, as CONSENT_MODE asks for it.

`none` asks nothing. With `parent`, a child is tutored for CONSENT_GRACE_MESSAGES messages (every
message they wrote counts, so a child cannot start over), then answered with the helpline and how
to get consent only, until a parent they linked with PARENT answers OUI with the request's code
(handlers/parents.py records it: the parent, when, on which channel). With `school`, a class import
records the school's consent for its students (bot.school.enrolment); a child outside any class
meets the same grace and the same way through a parent.

A child is who the safety layer looks after and who chose to be a student: mode "child" and not a
parent. A pro, a parent and a guest (who has chosen no profile yet and is held to the guests' daily
allowance) are never asked.

Consent is a row of `consents` pointing at the child and, when a parent gave it, at the parent:
`users forget` of either deletes it, and the child is then back to needing it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.accounts.errors import AccountError
from bot.config_groups import Safety
from bot.storage.models import Consent, User, consent_lacking

__all__ = ["CHANNELS", "consent_missing", "consent_shown", "consent_text", "record_consent"]

CHANNELS = ("whatsapp", "sms", "school", "cli")  # cli: `python -m bot chat`, the console


async def consent_missing(db: AsyncSession, safety: Safety, user: User) -> bool:
    """True when this user may not be tutored: a child past the grace with no consent on record
    (`consent_lacking`, the rule beside the table)."""
    return await consent_lacking(db, user, safety.consent_mode, safety.consent_grace_messages)


async def record_consent(db: AsyncSession, student_id: int, *, given_by: str, channel: str, now: datetime,
                         given_by_id: int | None = None) -> bool:
    """Records a consent in the caller's transaction; False when the same person (the same parent,
    or the school for a school's consent) had already given it, so that a class imported again
    changes nothing."""
    if channel not in CHANNELS:
        raise AccountError(f"consent channel must be one of {', '.join(CHANNELS)}, got {channel!r}")
    same = select(Consent.id).where(Consent.student_id == student_id)
    same = (same.where(Consent.channel == "school") if given_by_id is None
            else same.where(Consent.given_by_id == given_by_id))
    if await db.scalar(same.limit(1)) is not None:
        return False
    db.add(Consent(student_id=student_id, given_by_id=given_by_id, given_by=given_by[:200], channel=channel,
                   given_at=now))
    await db.flush()
    return True


async def consent_shown(db: AsyncSession, user_id: int) -> dict[str, list[dict[str, Any]]]:
    """The consents on record for the user as a child (`for_me`) and those they gave as a parent
    (`given`): who, when, by which channel."""
    rows = await db.scalars(select(Consent).where((Consent.student_id == user_id)
                                                  | (Consent.given_by_id == user_id)).order_by(Consent.id))
    shown: dict[str, list[dict[str, Any]]] = {"for_me": [], "given": []}
    for row in rows:
        item = {"who": row.given_by, "when": row.given_at.isoformat(), "channel": row.channel}
        if row.student_id == user_id:
            shown["for_me"].append(item)
        else:
            shown["given"].append({**item, "student_id": row.student_id})
    return shown


def consent_text(shown: dict[str, list[dict[str, Any]]]) -> str:
    """One line of `users show`."""
    mine = "; ".join(f"by {c['who']} on {c['when']} ({c['channel']})" for c in shown["for_me"]) or "none"
    if shown["given"]:
        mine += f"; gave it for {len(shown['given'])} child(ren)"
    return mine
