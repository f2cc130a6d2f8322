"""The background sender, and the final status of the inbound message the answers were for.

`run_outbox` (started with the workers, in one process at a time) sends the queued rows every
OUTBOX_POLL_S, address by address in id order, each after the previous one is reported sent (as
inline), until Twilio takes a row, refuses it for good (`failed`), or it is older than
OUTBOX_MAX_AGE_S, or than SEND_MAX_AGE_S (dropped, error code `expired`, counted; a row found sent
at Twilio after an ambiguous attempt is recorded sent whatever its age). A row in `sending` with no
SID for longer than a send can take (a process died in the middle) is queued again: at least once,
not at most once; an ambiguous failure is looked up at Twilio before it is sent again.

The inbound row ends `done` when every answer was accepted, `delivering` while one waits in the
outbox (the sender sets it `done` or `undelivered` later), `undelivered` when one failed for good
(`inbound_outcome`; `finish_inbound` ends a handled message so, in one statement). Imports `health`
and `attempt`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from datetime import timedelta
from typing import Any

from sqlalchemy import bindparam, case, exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from bot import logs, metrics
from bot.channel.outbound.attempt import (
    DIRECT_KINDS,
    OUTBOX_WAITING,
    TOLD_KINDS,
    is_retryable,
    mark_interrupted,
    record_failure,
    retry_later,
    store_sent,
    tell_failures,
    time_left,
    wait_sent,
)
from bot.channel.twilio_client import SendExpired, TwilioSendError
from bot.services import Services
from bot.storage.db import rowcount
from bot.storage.models import InboundMessage, OutboundMessage

log = logging.getLogger("bot.channel.outbound")

OUTBOX_LOCK = "lock:outbox"


async def inbound_outcome(db: AsyncSession, inbound_id: int) -> str:
    """The status of a handled inbound message, from its answers: done, delivering or undelivered."""
    rows = (await db.execute(
        select(OutboundMessage.status, OutboundMessage.kind)
        .where(OutboundMessage.inbound_id == inbound_id, OutboundMessage.sid.is_(None)))).all()
    if any(status in OUTBOX_WAITING for status, _ in rows):
        return "delivering"
    if any(status == "failed" and kind in TOLD_KINDS for status, kind in rows):
        return "undelivered"
    return "done"


@functools.cache
def _finish_statement() -> Any:
    """`finish_inbound`'s UPDATE, built once (its values bound at each message's end): building it
    cost about a third of a millisecond of a worker's CPU a message."""
    inbound_id: Any = bindparam("b_inbound_id")
    user_id: Any = bindparam("b_user_id")
    waiting = exists().where(OutboundMessage.inbound_id == inbound_id, OutboundMessage.sid.is_(None),
                             OutboundMessage.status.in_(OUTBOX_WAITING))
    failed = exists().where(OutboundMessage.inbound_id == inbound_id, OutboundMessage.sid.is_(None),
                            OutboundMessage.status == "failed", OutboundMessage.kind.in_(TOLD_KINDS))
    other = aliased(InboundMessage)
    more = exists().where(other.user_id == user_id, other.status == "pending")
    return (update(InboundMessage).where(InboundMessage.id == inbound_id)
            .values(status=case((waiting, "delivering"), (failed, "undelivered"), else_="done"),
                    processed_at=bindparam("b_now", type_=InboundMessage.processed_at.type))
            .returning(InboundMessage.status, more).execution_options(synchronize_session=False))


async def finish_inbound(db: AsyncSession, inbound_id: int, user_id: int, now: Any) -> tuple[str, bool]:
    """Ends a handled inbound message in one UPDATE: its status from its answers, as
    `inbound_outcome` says it, and whether another of the user's rows is pending. Not committed."""
    status, pending = (await db.execute(
        _finish_statement(), {"b_inbound_id": inbound_id, "b_user_id": user_id, "b_now": now})).one()
    return str(status), bool(pending)


async def _settle_inbound(services: Services, inbound_ids: set[int]) -> None:
    """Inbound rows that waited for the outbox get their final status."""
    if not inbound_ids:
        return
    async with services.sessions() as db:
        for row in (await db.scalars(select(InboundMessage).where(
                InboundMessage.id.in_(inbound_ids), InboundMessage.status == "delivering"))).all():
            outcome = await inbound_outcome(db, row.id)
            if outcome != "delivering":
                row.status = outcome
        await db.commit()


async def run_outbox(services: Services, stopping: asyncio.Event) -> None:
    """The background sender: one round every OUTBOX_POLL_S, in one process at a time."""
    interval = services.settings.outbox_poll_s
    while not stopping.is_set():
        try:
            token = await services.state.acquire(OUTBOX_LOCK, max(300.0, interval * 10))
            if token is not None:
                try:
                    await deliver_outbox(services)
                finally:
                    await services.state.release(OUTBOX_LOCK, token)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("outbox round failed")  # database or state away: the next round tries again
        try:
            await asyncio.wait_for(stopping.wait(), interval)
        except TimeoutError:
            pass


async def deliver_outbox(services: Services) -> int:
    """Sends what is due in the outbox, address by address in id order; returns how many Twilio took."""
    await _requeue_stale(services)
    now = services.clock()
    async with services.sessions() as db:
        rows = (await db.execute(
            select(OutboundMessage.id, OutboundMessage.to_addr, OutboundMessage.status,
                   OutboundMessage.next_attempt_at)
            .where(OutboundMessage.sid.is_(None), OutboundMessage.status.in_(OUTBOX_WAITING))
            .order_by(OutboundMessage.id))).all()
    waiting: dict[str, list[int]] = {}
    due: set[str] = set()
    for row_id, to, status, at in rows:
        if to not in waiting:
            waiting[to] = []
            # The oldest row of an address decides: one still being sent holds the others back.
            if status == "queued" and (at is None or at <= now):
                due.add(to)
        waiting[to].append(row_id)
    sent = 0
    for to in due:
        sent += await _drain(services, waiting[to])
    return sent


async def _drain(services: Services, row_ids: list[int]) -> int:
    """Sends one address's waiting rows in order; stops at the first that must wait again."""
    sent, told, inbound_ids = 0, None, set()
    for index, row_id in enumerate(row_ids):
        with logs.scope():  # each row's lines carry its own message's id (bound in _send_queued)
            outcome, row, fields = await _send_queued(services, row_id)
        if row is None:
            break  # taken by someone else: its order is theirs now
        if row.inbound_id is not None:
            inbound_ids.add(row.inbound_id)
        if outcome == "retry":
            break
        if outcome == "sent":
            sent += 1
            if row.user_id is not None and not fields.get("content_sid"):
                told = (row.user_id, row.channel, str(fields.get("to", "")), str(fields.get("from_", "")))
            if index < len(row_ids) - 1:
                await wait_sent(services, row.sid or "", row.status)
    if told is not None:
        await tell_failures(services, *told)
    await _settle_inbound(services, inbound_ids)
    return sent


async def _send_queued(services: Services, row_id: int
                       ) -> tuple[str, OutboundMessage | None, dict[str, Any]]:
    """Claims and sends one outbox row: ("sent" | "retry" | "failed", row, its fields), or "gone"."""
    now = services.clock()
    async with services.sessions() as db:
        claimed = await db.execute(
            update(OutboundMessage)
            .where(OutboundMessage.id == row_id, OutboundMessage.status == "queued",
                   OutboundMessage.sid.is_(None))
            .values(status="sending", updated_at=now))
        await db.commit()
        if rowcount(claimed) != 1:
            return "gone", None, {}
        row = await db.get(OutboundMessage, row_id)
        assert row is not None
        logs.bind(inbound_id=row.inbound_id, outbound_id=row.id)
        fields = dict(row.payload or {})
        age = (now - row.created_at).total_seconds() if row.created_at else 0.0
        if not fields or age > services.settings.outbox_max_age_s:
            why = "nothing to send" if not fields else f"not taken by Twilio within {age:.0f} s"
            await record_failure(services, db, row, row.channel, TwilioSendError(why))
            return "failed", row, fields
        left = time_left(services, row.created_at)
        try:
            found = None
            if (row.last_error or "").startswith("ambiguous"):
                found = await services.twilio.find_sent(fields, row.created_at)
            if found is None and left < 0:
                raise SendExpired(f"expired: not taken by Twilio within {age:.0f} s (SEND_MAX_AGE_S)")
            sent = found or await services.twilio.create_message(fields, max_wait_s=left)
        except asyncio.CancelledError:
            await mark_interrupted(services, row.id, "queued")  # looked up, then sent, by the next round
            raise
        except TwilioSendError as exc:
            if is_retryable(exc):
                await retry_later(services, db, row, exc)
                return "retry", row, fields
            await record_failure(services, db, row, row.channel, exc, path="outbox")
            return "failed", row, fields
        await store_sent(services, row, sent)
        metrics.OUTBOUND.labels(row.channel, "sent").inc()
        log.info("outbox message sent", extra={"outbound_id": row.id, "attempts": row.attempts})
        return "sent", row, fields


async def _requeue_stale(services: Services) -> None:
    """A row left `sending` without SID by a process that died: queued again, looked up first."""
    settings = services.settings
    stale = settings.twilio_timeout_s * (settings.twilio_send_attempts + 1) + 60.0
    async with services.sessions() as db:
        await db.execute(
            update(OutboundMessage)
            .where(OutboundMessage.sid.is_(None), OutboundMessage.status == "sending",
                   OutboundMessage.kind.in_(DIRECT_KINDS),
                   OutboundMessage.updated_at < services.clock() - timedelta(seconds=stale))
            .values(status="queued", next_attempt_at=services.clock(),
                    last_error="ambiguous: interrupted while sending"))
        await db.commit()
