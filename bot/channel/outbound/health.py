"""The opt-out as stored, and delivery health: when proactive messages to a user stop.

- A user who opted out gets nothing, except the confirmation of the opt-out itself. Every send
  reads the flag as stored now, not as its caller loaded it, in the transaction that records it
  (`refusal_in`; `stored_refusal`, `opted_out_now` for a read of its own).
- After DELIVERY_BLOCK_AFTER permanent failures in a row to a user (error codes in
  PERMANENT_CODES, from the REST call or from a status callback), or one that is the person's
  own refusal (BLOCK_AT_ONCE: 21610, 63014), proactive messages stop: reminders, summaries, sends
  a tool asks for, anything not a direct answer (`attempt.DIRECT_KINDS`). The reason and time are
  kept on the user (`delivery_blocked_reason`, `delivery_blocked_at`). Direct answers to the
  message a user just sent still go: writing to us proves the number works, and every inbound
  message resets it.
- A user erased meanwhile (`users forget`, SUPPRIMER: their row is gone) gets nothing, and nothing
  is recorded for them: a send that outlived them (a reminder, a job's last message, a waiting
  file) is refused before its row is written (`refusal_in`, `user_gone`: read in the inserting
  transaction).

Imports only `scope` of the package.
"""

from __future__ import annotations

import logging

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel.outbound.scope import commit_turn
from bot.services import Services
from bot.storage.models import OutboundMessage, User

log = logging.getLogger("bot.channel.outbound")

FAILED = frozenset({"failed", "undelivered"})
# Twilio error codes meaning this number cannot be reached this way, however often we retry.
PERMANENT_CODES: dict[int, str] = {
    21211: "invalid number",
    21610: "unsubscribed (STOP to the carrier)",
    21612: "not reachable from this sender",
    21614: "not a mobile number",
    30005: "unknown or inactive handset",
    30006: "landline or unreachable carrier",
    63003: "inactive or invalid WhatsApp address",
    63014: "the person blocked the sender",
    63024: "not a WhatsApp user",
}
# The person's own refusal: one is enough.
BLOCK_AT_ONCE = frozenset({21610, 63014})


async def opted_out_now(services: Services, user_id: int | None) -> bool:
    """The flag as stored now, not as the caller loaded it: a STOP the webhook applied while a long
    turn ran stops that turn's sends at once."""
    if user_id is None:
        return False
    async with services.sessions() as db:
        return bool(await db.scalar(select(User.opted_out).where(User.id == user_id)))


async def refusal_in(services: Services, db: AsyncSession, user_id: int | None, *, opt_out_kind: bool,
                     proactive: bool) -> tuple[str, str | None] | None:
    """Why a send must not go, read in the transaction that records it (one read of the user's row,
    held as `user_gone` holds it): erased ("erased"), opted out ("opted_out", but for the opt-out's
    own confirmations, `opt_out_kind`), or, for a proactive send, delivery blocked."""
    if user_id is None:
        return None
    user = await db.scalar(select(User).where(User.id == user_id).with_for_update(read=True, key_share=True))
    if user is None:
        return "erased", None
    if user.opted_out and not opt_out_kind:
        return "opted_out", None
    reason = await _blocked_reason(services, db, user) if proactive and not opt_out_kind else None
    return ("delivery_blocked", reason) if reason is not None else None


async def stored_refusal(services: Services, user_id: int | None, *,
                         proactive: bool) -> tuple[str, str | None] | None:
    """Why a send to this user must not go, from the user's row as stored now, not as the caller
    loaded it (one read): they opted out meanwhile (a STOP the webhook applied while a long turn
    ran), or, for a proactive send, their delivery is blocked (`delivery_blocked`), or they were
    erased since the caller loaded them ("erased"). A user with no id (the farewell of a person
    just erased, sent to their address only) has no row to read."""
    if user_id is None:
        return None
    async with services.sessions() as db:
        user = await db.get(User, user_id)
        if user is None:
            return "erased", None
        if user.opted_out:
            return "opted_out", None
        reason = await _blocked_reason(services, db, user) if proactive else None
        return ("delivery_blocked", reason) if reason is not None else None


async def user_gone(db: AsyncSession, user_id: int | None) -> bool:
    """Whether the user of a message about to be recorded was erased (no row). On PostgreSQL the row
    is held (FOR KEY SHARE, as the foreign key's own check holds it) until this transaction ends, so
    an erasure cannot slip between this read and the insert that follows."""
    if user_id is None:
        return False
    found = await db.scalar(select(User.id).where(User.id == user_id)
                            .with_for_update(read=True, key_share=True))
    return found is None


async def delivery_blocked(services: Services, user_id: int) -> str | None:
    """Why proactive messages to this user are stopped, or None."""
    async with services.sessions() as db:
        user = await db.get(User, user_id)
        return None if user is None else await _blocked_reason(services, db, user)


async def _blocked_reason(services: Services, db: AsyncSession, user: User) -> str | None:
    """Judged from the user's latest sends when failures were recorded since they last wrote or got
    a message delivered."""
    if user.delivery_blocked_at is None and user.delivery_failures:
        await commit_turn()
        await judge_delivery_health(services, db, user)
        await db.commit()
    return user.delivery_blocked_reason if user.delivery_blocked_at is not None else None


async def judge_delivery_health(services: Services, db: AsyncSession, user: User) -> None:
    """Blocks proactive sends to `user` after repeated permanent failures since they last wrote.

    The failures are read from the sends themselves, whatever recorded them: the REST call's
    refusal or a status callback's ErrorCode."""
    query = select(OutboundMessage.status, OutboundMessage.error_code, OutboundMessage.channel).where(
        OutboundMessage.user_id == user.id)
    if user.last_inbound_at is not None:
        query = query.where(OutboundMessage.created_at >= user.last_inbound_at)
    threshold = services.settings.delivery_block_after
    rows = (await db.execute(query.order_by(OutboundMessage.id.desc()).limit(threshold))).all()
    streak: list[tuple[int, str]] = []
    for status, error_code, channel in rows:
        code = int(error_code) if error_code and error_code.isdigit() else None
        if status not in FAILED or code not in PERMANENT_CODES:
            break
        streak.append((code, channel))
    if not streak or (len(streak) < threshold and not any(c in BLOCK_AT_ONCE for c, _ in streak)):
        return
    code, channel = next(((c, ch) for c, ch in streak if c in BLOCK_AT_ONCE), streak[0])
    user.delivery_blocked_reason = f"{code} {channel}: {PERMANENT_CODES[code]}"[:160]
    user.delivery_blocked_at = services.clock()
    log.warning("proactive messages stopped",
                extra={"user_id": user.id, "reason": user.delivery_blocked_reason, "failures": len(streak)})


async def note_status(services: Services, db: AsyncSession, user_id: int | None, status: str, *,
                      failures: int | None = None) -> None:
    """For the status callback of a message to `user_id`: a failure counts towards the user's
    delivery health, a delivery clears it. The user's row is read only for a failure; a delivery
    is one UPDATE that touches the row only when failures were counted, and none when the caller
    read `failures` (the user's count) as 0."""
    if user_id is None:
        return
    if status in ("delivered", "read"):
        if failures == 0:
            return
        await db.execute(update(User).where(User.id == user_id, User.delivery_failures > 0)
                         .values(delivery_failures=0).execution_options(synchronize_session=False))
        return
    if status not in FAILED:
        return
    user = await db.get(User, user_id)
    if user is None:
        return
    user.delivery_failures = (user.delivery_failures or 0) + 1
    await db.flush()
    if user.delivery_blocked_at is None:
        await judge_delivery_health(services, db, user)
