"""One message: its `outbound_messages` row, then Twilio, then the record of what happened.

Every message is a row before it leaves. Direct answers (DIRECT_KINDS) are sent at once, inline;
when Twilio does not take one for a reason that may pass (5xx, 429, refused connection, timeout;
`is_retryable`) the row stays `queued` for the background sender (`outbox`), with a backoff that
doubles with each attempt (OUTBOX_BACKOFF_S up to OUTBOX_BACKOFF_MAX_S). Order per address: while
a row to an address waits, later ones to it are queued behind it, never sent ahead. Proactive
kinds are not queued: their caller (bot.channel.scheduled) retries them with its own backoff.
A refusal for good (PERMANENT_CODES and any other 4xx) is `failed` and counts towards the user's
delivery health (`health`). A message already recorded under the turn's idempotency key
(`scope.SendKeys`) is not sent again: its row is the answer. Twilio's SID is stored shielded from
cancellation: a stop right after Twilio took a message must not leave it looking unsent.

Nothing is recorded or sent for a user erased meanwhile, nor for one who opted out meanwhile or,
for a proactive kind, whose delivery is blocked (`health.refusal_in`, read in the transaction of
the insert). A direct message that failed for good (TOLD_KINDS) is told to the user with the next
free-form message Twilio accepts for them (`tell_failures`, `failure_told_at`; whether any waits
is read in that same transaction too).

Each message waits for its sender's moment (bot.channel.pacing, TWILIO_SENDER_MPS) for no longer
than what is left of SEND_MAX_AGE_S since its row was queued (`time_left`); past it the message is
dropped unsent (`SendExpired`): `failed` with error code `expired`, counted, and for a direct kind
told to the user like any failure, never reported as sent.

Twilio does not keep separate messages in order: `wait_sent` waits until one is reported sent
(status callback) or OUTBOUND_PART_WAIT_S passed. Imports `result`, `scope` and `health`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, case, exists, func, null, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from bot import metrics
from bot.channel import formatting
from bot.channel.metering import recorded_price, template_category
from bot.channel.outbound.health import FAILED, PERMANENT_CODES, judge_delivery_health, refusal_in
from bot.channel.outbound.scope import (
    SendKeys,
    current_inbound,
    current_keys,
    record_session,
    sending,
    sid_with_turn,
)
from bot.channel.twilio_client import SendExpired, SentMessage, TwilioNotConfigured, TwilioSendError
from bot.services import Services
from bot.storage.db import write_at_commit
from bot.storage.models import OutboundMessage, User
from bot.texts import fr_en

log = logging.getLogger("bot.channel.outbound")

SENT_OR_BETTER = frozenset({"sent", "delivered", "read"})
# Kinds that answer the message a user just sent; every other kind is proactive (delivery health).
DIRECT_KINDS = frozenset({"reply", "tool", "progress", "notice", "system", "optout", "pending_file"})
# Direct kinds whose failure for good the user is told of with their next delivered message.
TOLD_KINDS = frozenset({"reply", "tool", "progress", "system", "pending_file"})
# Kinds that reach a user who opted out: only the confirmations of STOP and START.
OPT_OUT_KINDS = frozenset({"optout"})
OUTBOX_WAITING = ("queued", "sending")


def is_retryable(exc: TwilioSendError) -> bool:
    """Worth another try later: Twilio unreachable, rate limited, a 5xx, or an ambiguous end."""
    if isinstance(exc, TwilioNotConfigured | SendExpired):
        return False
    return exc.ambiguous or exc.code == 20429 or exc.status is None or exc.status == 429 or exc.status >= 500


def time_left(services: Services, queued_at: datetime | None) -> float:
    """Seconds left of SEND_MAX_AGE_S for a message queued at `queued_at` (on `Services.clock`)."""
    if queued_at is None:
        return math.inf
    return services.settings.send_max_age_s - (services.clock() - queued_at).total_seconds()


@dataclass
class Attempt:
    """What sending one message did: Twilio's SID and status, its error, or that it waits."""

    sid: str = ""
    status: str = ""
    exc: TwilioSendError | None = None
    queued: bool = False  # the row waits in the outbox
    erased: bool = False  # the user is gone: nothing recorded, nothing sent
    refused: tuple[str, str | None] | None = None  # opted out, delivery blocked: (why, detail)
    untold: bool = False  # earlier direct messages failed for good, not told yet (`tell_failures`)


def _fields(services: Services, to: str, from_: str, message: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {"to": to, "from_": from_,
                              "status_callback": services.settings.public_base_url + "/twilio/status"}
    if message.get("body"):
        fields["body"] = message["body"]
    if message.get("media_url"):
        fields["media_url"] = [message["media_url"]]
    if message.get("content_sid"):
        fields["content_sid"] = message["content_sid"]
        fields["content_variables"] = message["content_variables"]
    return fields


def _replayed(row: OutboundMessage) -> Attempt:
    """The attempt of a message already recorded under the same idempotency key."""
    log.info("message already recorded, not sent again", extra={"key": row.idempotency_key, "sid": row.sid})
    if row.sid:
        return Attempt(sid=row.sid, status=row.status)
    if row.status in OUTBOX_WAITING:
        return Attempt(queued=True)
    code = int(row.error_code) if row.error_code and row.error_code.isdigit() else None
    return Attempt(exc=TwilioSendError(row.last_error or "not sent", code=code))


def _backlog_exists(to: Any) -> Any:
    """Whether a message to `to` recorded before this one has not left yet (this one must wait
    behind it); read before this one is recorded."""
    return exists().where(OutboundMessage.to_addr == to, OutboundMessage.sid.is_(None),
                          OutboundMessage.status.in_(OUTBOX_WAITING))


async def _backlog(db: AsyncSession, to: str) -> bool:
    return bool(await db.scalar(select(_backlog_exists(to))))


async def send_one(services: Services, user_id: int | None, channel: str, to: str, from_: str,
                   message: dict[str, Any], kind: str, *, queue_only: bool = False) -> Attempt:
    """Records one message, then sends it (or queues it behind an earlier one, or with
    `queue_only`); a key already recorded is answered from its row, not sent again. Whether the
    user may get it is read in the same transaction (`health.refusal_in`)."""
    fields = _fields(services, to, from_, message)
    keys = current_keys.get()
    key = keys.next() if keys is not None else None
    outbox = kind in DIRECT_KINDS and not message.get("no_outbox")
    async with record_session(services.sessions) as (db, turns):
        look = await _look(services, db, user_id, to, kind, key)
        if isinstance(look, Attempt):
            return look
        untold, backlog = look
        untold = untold and not message.get("content_sid")
        row = _new_row(services, user_id, channel, to, message, kind, key, fields)
        recorded = await _record(db, row)
        if recorded is not None:
            return recorded
        queued = outbox and (queue_only or backlog)
        if queued:
            row.status, row.next_attempt_at = "queued", row.created_at
        await db.commit()
        if turns:
            # The row is the outbox's from here on (its SID is stored by UPDATE): the turn's
            # session must not write the copy below back when it next commits.
            db.expunge(row)
        if queued:
            metrics.OUTBOUND.labels(channel, "queued").inc()
            return Attempt(queued=True)
        try:
            left = time_left(services, row.created_at)
            sent = await services.twilio.create_message(fields, max_wait_s=left)
        except asyncio.CancelledError:
            # Stopped while Twilio had it: whether it went is unknown. Recorded so, it holds no later
            # message back (the turn's recovery tells the user their answer was interrupted).
            await mark_interrupted(services, row.id, "unknown")
            raise
        except TwilioSendError as exc:
            if turns:
                db.add(row)  # its failure is recorded where it was
            return await _not_taken(services, db, row, exc, outbox=outbox, kind=kind, message=message)
        if turns and sid_with_turn():
            _record_sent(services, row, sent)
            metrics.TWILIO_SENDS.labels(row.channel, "accepted", "none").inc()
            write_at_commit(db, _sent_update(services, row.id, sent))  # with the message's end
        else:
            await store_sent(services, row, sent)
    metrics.OUTBOUND.labels(channel, "sent").inc()
    return Attempt(sid=sent.sid, status=sent.status, untold=untold)


async def _look(services: Services, db: AsyncSession, user_id: int | None, to: str, kind: str,
                key: str | None) -> Attempt | tuple[bool, bool]:
    """What is read before a message is recorded, in the transaction that records it: whether the
    user may get it (`health.refusal_in`), the row its key already has, whether earlier direct
    messages to the user failed untold (`tell_failures`) and whether an earlier message to `to`
    has not left yet (this one then waits behind it). A direct message to a user is one SELECT;
    otherwise one each. Returns the attempt when the message must not be recorded, else
    (untold, backlog)."""
    if user_id is not None and kind in DIRECT_KINDS:
        return await _look_direct(db, user_id, to, kind, key)
    refused = await refusal_in(services, db, user_id, opt_out_kind=kind in OPT_OUT_KINDS,
                               proactive=kind not in DIRECT_KINDS)
    if refused is not None:
        return Attempt(erased=True) if refused[0] == "erased" else Attempt(refused=refused)
    if key is not None:
        existing = await db.scalar(select(OutboundMessage).where(OutboundMessage.idempotency_key == key))
        if existing is not None:
            return _replayed(existing)
    untold = user_id is not None and await _untold(db, user_id)
    return untold, kind in DIRECT_KINDS and await _backlog(db, to)


@functools.cache
def _look_direct_statement(keyed: bool) -> Any:
    """`_look_direct`'s SELECT, built once per shape (with an idempotency key or without), its
    values bound at each send: building it cost about half a millisecond of a worker's CPU."""
    outbound = aliased(OutboundMessage)
    existing = (select(outbound.id).where(outbound.idempotency_key == bindparam("b_key")).scalar_subquery()
                if keyed else null())
    untold = exists().where(*_untold_where(bindparam("b_user_id")))
    return (select(User.opted_out, existing, untold, _backlog_exists(bindparam("b_to")))
            .where(User.id == bindparam("b_user_id")).with_for_update(read=True, key_share=True, of=User))


async def _look_direct(db: AsyncSession, user_id: int, to: str, kind: str,
                       key: str | None) -> Attempt | tuple[bool, bool]:
    """`_look` for a direct message to a user, in one SELECT of the user's row, held as
    `health.user_gone` holds it (an erasure cannot slip in before the insert)."""
    values: dict[str, Any] = {"b_user_id": user_id, "b_to": to}
    if key is not None:
        values["b_key"] = key
    found = (await db.execute(_look_direct_statement(key is not None), values)).first()
    if found is None:
        return Attempt(erased=True)
    opted_out, existing_id, has_untold, backlog = found
    if opted_out and kind not in OPT_OUT_KINDS:
        return Attempt(refused=("opted_out", None))
    if existing_id is not None:
        row = await db.get(OutboundMessage, existing_id)
        assert row is not None
        return _replayed(row)
    return bool(has_untold), bool(backlog)


async def _record(db: AsyncSession, row: OutboundMessage) -> Attempt | None:
    """Inserts the message's row; when its idempotency key was recorded in the meantime, the
    attempt of that row instead (nothing sent twice)."""
    db.add(row)
    try:
        await db.flush()
    except IntegrityError:
        # Another run of the same turn recorded this key between our look and this insert (a
        # worker still finishing a turn whose lease ran out while the shared state was down).
        await db.rollback()
        key = row.idempotency_key
        existing = None if key is None else await db.scalar(
            select(OutboundMessage).where(OutboundMessage.idempotency_key == key))
        if existing is None:
            raise
        return _replayed(existing)
    return None


def _new_row(services: Services, user_id: int | None, channel: str, to: str, message: dict[str, Any],
             kind: str, key: str | None, fields: dict[str, Any]) -> OutboundMessage:
    body = message.get("body", "")
    now = services.clock()
    template = bool(message.get("template"))
    path = services.settings.costs.cost_rates_file
    price, category = recorded_price(path, channel, to, template_category(path, fields), template)
    return OutboundMessage(
        user_id=user_id, channel=channel, to_addr=to, body=message.get("record_body", body),
        media_url=message.get("media_url"), kind=kind, status="sending",
        segments=formatting.sms_segments(body)[1] if channel == "sms" else None,
        template=template, category=category, price_micro=price,
        inbound_id=current_inbound.get(), created_at=now, updated_at=now,
        idempotency_key=key, payload=fields, attempts=0,
    )


async def _not_taken(services: Services, db: AsyncSession, row: OutboundMessage, exc: TwilioSendError, *,
                     outbox: bool, kind: str, message: dict[str, Any]) -> Attempt:
    """Twilio did not take the message: back to the outbox when it may pass, else failed."""
    if outbox and is_retryable(exc):
        await retry_later(services, db, row, exc)
        return Attempt(exc=exc, queued=True)
    await record_failure(services, db, row, row.channel, exc)
    if kind not in TOLD_KINDS or kind == "tool" or message.get("no_outbox"):
        # The caller has the result (a tool's result tells the model): nothing to tell later.
        row.failure_told_at = services.clock()
        await db.commit()
    return Attempt(exc=exc)


async def _untold(db: AsyncSession, user_id: int) -> bool:
    """Whether direct messages to the user failed for good and were not told yet (`tell_failures`)."""
    found = await db.scalar(select(OutboundMessage.id).where(*_untold_where(user_id)).limit(1))
    return found is not None


def _untold_where(user_id: Any) -> tuple[Any, ...]:
    return (OutboundMessage.user_id == user_id, OutboundMessage.sid.is_(None),
            OutboundMessage.status == "failed", OutboundMessage.failure_told_at.is_(None),
            OutboundMessage.kind.in_(TOLD_KINDS))


async def mark_interrupted(services: Services, row_id: int, status: str) -> None:
    """Records a send cut short by cancellation (shielded: the update itself is not cut)."""

    async def record() -> None:
        async with services.sessions() as db:
            await db.execute(
                update(OutboundMessage)
                .where(OutboundMessage.id == row_id, OutboundMessage.sid.is_(None),
                       OutboundMessage.status == "sending")
                .values(status=status, last_error="ambiguous: interrupted while sending",
                        next_attempt_at=services.clock() if status == "queued" else None,
                        updated_at=services.clock()))
            await db.commit()

    with contextlib.suppress(Exception):
        await asyncio.shield(record())


async def store_sent(services: Services, row: OutboundMessage, sent: SentMessage) -> None:
    """Records Twilio's SID in a session of its own, shielded: a stop right after Twilio took the
    message must not leave it looking unsent (it would be sent again, or hold later ones back)."""

    async def store() -> None:
        async with services.sessions() as db:
            await db.execute(_sent_update(services, row.id, sent))
            await db.commit()

    _record_sent(services, row, sent)  # the caller's copy, for what it does next
    metrics.TWILIO_SENDS.labels(row.channel, "accepted", "none").inc()
    await asyncio.shield(store())


def _sent_update(services: Services, row_id: int, sent: SentMessage) -> Any:
    """Twilio's SID on the row, in one UPDATE: a status callback may already have moved the row on
    (the further status is kept)."""
    waiting = OutboundMessage.status.in_(OUTBOX_WAITING)
    return (update(OutboundMessage).where(OutboundMessage.id == row_id)
            .values(sid=sent.sid, attempts=func.coalesce(OutboundMessage.attempts, 0) + 1,
                    next_attempt_at=None, payload=None, updated_at=services.clock(),
                    status=case((waiting, sent.status), else_=OutboundMessage.status))
            .execution_options(synchronize_session=False))


def _record_sent(services: Services, row: OutboundMessage, sent: SentMessage) -> None:
    row.sid = sent.sid
    row.attempts = (row.attempts or 0) + 1
    row.next_attempt_at = None
    row.payload = None  # only needed to send it; it holds the address an erasure masks
    # A status callback may already have arrived and been recorded: keep the further one.
    if row.status in OUTBOX_WAITING:
        row.status = sent.status
    row.updated_at = services.clock()


def _backoff(services: Services, attempts: int) -> timedelta:
    settings = services.settings
    delay = min(settings.outbox_backoff_max_s, settings.outbox_backoff_s * 2 ** max(0, attempts - 1))
    return timedelta(seconds=delay)


async def retry_later(services: Services, db: AsyncSession, row: OutboundMessage,
                      exc: TwilioSendError) -> None:
    """Back to the outbox: tried again after a backoff that doubles with each attempt."""
    row.attempts = (row.attempts or 0) + 1
    row.status = "queued"
    row.error_code = str(exc.code or exc.status or "")[:16] or None
    # "ambiguous": Twilio may have it; the sender looks it up before sending again.
    row.last_error = ("ambiguous: " if exc.ambiguous else "") + str(exc)[:1900]
    row.next_attempt_at = services.clock() + _backoff(services, row.attempts)
    row.updated_at = services.clock()
    await db.commit()
    metrics.OUTBOUND.labels(row.channel, "retry").inc()
    metrics.TWILIO_SENDS.labels(row.channel, "retry", metrics.error_code(exc.code, exc.status)).inc()
    log.warning("send postponed to the outbox",
                extra={"outbound_id": row.id, "attempts": row.attempts, "code": exc.code,
                       "http_status": exc.status, "error": str(exc)[:300]})


async def record_failure(services: Services, db: AsyncSession, row: OutboundMessage, channel: str,
                         exc: TwilioSendError, *, path: str = "direct") -> None:
    """A send that will not go: `failed` (or `unknown` when ambiguous); a permanent refusal counts
    towards the user's delivery health."""
    row.attempts = (row.attempts or 0) + 1
    row.last_error = str(exc)[:2000]
    row.next_attempt_at, row.payload = None, None
    if isinstance(exc, SendExpired):
        await _record_expired(services, db, row, channel, path)
        return
    if isinstance(exc, TwilioNotConfigured):
        row.status, row.updated_at = "failed", services.clock()
        await db.commit()
        metrics.OUTBOUND.labels(channel, "not_configured").inc()
        metrics.TWILIO_SENDS.labels(channel, "not_configured", "none").inc()
        log.error("twilio is not configured", extra={"error": str(exc)})
        return
    row.status = "unknown" if exc.ambiguous else "failed"
    row.error_code = str(exc.code or exc.status or "")[:16] or None
    row.updated_at = services.clock()
    await db.commit()
    metrics.OUTBOUND.labels(channel, row.status).inc()
    metrics.TWILIO_SENDS.labels(channel, row.status, metrics.error_code(exc.code, exc.status)).inc()
    if row.user_id is not None and exc.code in PERMANENT_CODES:
        # Refused for good (the carrier has the person's STOP, the number is no mobile…): it
        # counts towards stopping proactive messages to them.
        user = await db.get(User, row.user_id)
        if user is not None:
            user.delivery_failures = (user.delivery_failures or 0) + 1
            await db.flush()
            if user.delivery_blocked_at is None:
                await judge_delivery_health(services, db, user)
            await db.commit()
    log.error("send failed", extra={"channel": channel, "code": exc.code, "http_status": exc.status,
                                    "ambiguous": exc.ambiguous, "error": str(exc)})


async def _record_expired(services: Services, db: AsyncSession, row: OutboundMessage, channel: str,
                          path: str) -> None:
    """Dropped unsent, queued longer than SEND_MAX_AGE_S: `failed`, code `expired`, counted. Not the
    user's fault: their delivery health is left alone."""
    row.status, row.error_code, row.updated_at = "failed", "expired", services.clock()
    await db.commit()
    if path == "direct" and row.kind not in DIRECT_KINDS:
        path = "scheduled"
    metrics.OUTBOUND.labels(channel, "expired").inc()
    metrics.SENDS_EXPIRED.labels(channel, path).inc()
    log.warning("send dropped: queued longer than SEND_MAX_AGE_S",
                extra={"outbound_id": row.id, "channel": channel, "kind": row.kind, "path": path,
                       "error": row.last_error})


async def wait_sent(services: Services, sid: str, status: str) -> str:
    """Waits until Twilio reports `sid` sent (or failed), at most OUTBOUND_PART_WAIT_S."""
    if status in SENT_OR_BETTER or status in FAILED:
        return status
    loop = asyncio.get_running_loop()
    deadline = loop.time() + services.settings.outbound_part_wait_s
    delay = 0.02
    while loop.time() < deadline:
        seen = await services.state.kv_get(f"outstatus:{sid}")
        if seen in SENT_OR_BETTER or seen in FAILED:
            return seen
        await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
        delay = min(delay * 1.5, 0.2)
    return status


TOLD = ("⚠️ Un de mes messages précédents n'a pas pu être remis : {items}. Il suffit de le redemander "
        "si besoin.",
        "⚠️ One of my previous messages could not be delivered to you: {items}. Ask me again if needed.")


def _preview(body: str, limit: int = 60) -> str:
    text = re.sub(r"\s+", " ", formatting.to_plain(body or "")).strip() or "📎"
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


async def tell_failures(services: Services, user_id: int, channel: str, to: str, from_: str) -> None:
    """Tells the user which direct messages never went out, on an address that just worked."""
    try:
        async with services.sessions() as db:
            rows = list((await db.scalars(
                select(OutboundMessage).where(*_untold_where(user_id))
                .order_by(OutboundMessage.id).limit(20))).all())
            user = await db.get(User, user_id) if rows else None
        if not rows or user is None:
            return
        items = " ; ".join(f"« {_preview(r.body)} »" for r in rows[:3])
        if len(rows) > 3:
            items += f" (+{len(rows) - 3})"
        text = fr_en(user.language, *TOLD).format(items=items)
        body = (formatting.whatsapp_parts(formatting.to_whatsapp(text)) if channel == "whatsapp"
                else formatting.sms_parts(formatting.to_sms(text)))[0]
        with sending(keys=SendKeys(f"told:{rows[0].id}")):
            attempt = await send_one(services, user_id, channel, to, from_, {"body": body}, "notice")
        if attempt.sid or attempt.queued:
            async with services.sessions() as db:
                await db.execute(update(OutboundMessage)
                                 .where(OutboundMessage.id.in_([r.id for r in rows]))
                                 .values(failure_told_at=services.clock()))
                await db.commit()
    except Exception:
        log.exception("could not tell the user of a failed message", extra={"user_id": user_id})


async def rehearse_reply(services: Services, db: AsyncSession, user_id: int, key: str) -> None:
    """A reply's look and row for a made-up message, written as a send writes them, never sent: the
    worker's warm-up (bot.warm) runs it in a transaction it rolls back, so that SQLAlchemy compiles
    these statements before a user's first reply does."""
    to = "whatsapp:+0"
    await _look_direct(db, user_id, to, "reply", key)
    await _record(db, _new_row(services, user_id, "whatsapp", to, {"body": "bonjour"}, "reply", key, {}))
