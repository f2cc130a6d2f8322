"""Proactive sends (reminders, weekly summaries, parents' digests, practice nudges), planned once and
sent at least once, never twice.

Sends: a job first plans what it means to send as ScheduledSend rows with a unique `key` (task and
reminder, link and week, parent and day), so a message is planned once whichever worker runs the
job. `deliver_due` then claims each due row with an atomic UPDATE … WHERE and sends it:
- accepted by Twilio: "sent", never claimed again;
- not sent for a reason that will not pass (opted out, delivery blocked, no address, channel not
  configured): "skipped"; refused by Twilio for good (an invalid number…): "failed";
- an error raised after the message was handed to Twilio (recording it failed): "unknown", not
  retried. An ambiguous Twilio failure is retried like any other: bot.channel.twilio_client has already
  looked the message up in Twilio's list and not found it;
- anything else (Twilio unreachable or rate limited, the WhatsApp window closed, the row failing to
  render, the database away): the claim is released with `next_attempt_at` = now +
  SCHEDULED_SEND_BACKOFF_S × 2^(attempts − 1), and after SCHEDULED_SEND_ATTEMPTS attempts the row
  is recorded as "failed".
- due longer than SEND_MAX_AGE_S ago (from its planning, or its slot if later; from its slot alone
  for the kinds `deliver_due` is told are about that moment, as a task's reminder: the workers were
  down, Twilio refused it for an hour, its sender's pace had no moment free in time): "expired",
  logged and counted in `deblo_sends_expired_total`, never sent: a reminder for 08:00 does not
  arrive at noon.
A claim still held after SCHEDULED_SEND_CLAIM_S means the worker died mid-send: it counts as an
attempt and is retried. Only there can a message go twice (if Twilio had accepted it in the
instant before the worker died); everywhere else a message goes at least once and never twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from bot import metrics
from bot.storage.db import rowcount
from bot.storage.models import OutboundMessage, ScheduledSend, User, consent_lacking

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from bot.channel.buttons import Menu
    from bot.channel.outbound import SendResult
    from bot.services import Services

__all__ = ["RETRIED_SKIPS", "Outgoing", "Render", "deliver_due", "plan", "plan_each"]

log = logging.getLogger("bot.channel.scheduled")

# SendResult.skipped reasons that may change by the next attempt (the user writes again and opens the
# WhatsApp window). Any other reason (opted out, delivery blocked, not configured…) is final.
RETRIED_SKIPS = frozenset({"window_closed"})
_BATCH = 200
_RECORD_TRIES = 3




@dataclass
class Outgoing:
    """What a planned row renders to: the recipient, the text, the channel (None: their last one);
    a `menu` goes as WhatsApp buttons where it can (its body the text), a `template` (an approved
    content sid and its variables) as that template, `text` its record."""

    user: User
    text: str
    channel: str | None = None
    kind: str = "reminder"
    menu: Menu | None = None
    template: tuple[str, dict[str, str]] | None = None


# Renders one planned row (in a read-only session) at `now`; None when there is nothing to send anymore.
Render = Callable[["Services", "AsyncSession", ScheduledSend, datetime], Awaitable[Outgoing | None]]


async def plan(db: AsyncSession, now: datetime, *, key: str, kind: str, user_id: int,
               slot_at: datetime, task_id: int | None = None, link_id: int | None = None) -> bool:
    """Adds a row to send (in the caller's transaction); False when `key` was planned already."""
    try:
        async with db.begin_nested():
            db.add(ScheduledSend(key=key, kind=kind, user_id=user_id, task_id=task_id, link_id=link_id,
                                 slot_at=slot_at, status="pending", attempts=0, next_attempt_at=now,
                                 created_at=now))
        return True
    except IntegrityError:
        return False


async def plan_each(db: AsyncSession, now: datetime, kind: str, wanted: Mapping[str, int]) -> int:
    """Plans a row of `kind`, due now, for each key (its user id) not planned yet, in the caller's
    transaction; returns how many were planned. The keys planned already are read in one query
    first: most ticks plan nothing new."""
    if not wanted:
        return 0
    known = set(await db.scalars(select(ScheduledSend.key).where(ScheduledSend.key.in_(list(wanted)))))
    planned = 0
    for key, user_id in wanted.items():
        if key not in known:
            planned += await plan(db, now, key=key, kind=kind, user_id=user_id, slot_at=now)
    return planned


def _claimable(now: datetime, max_attempts: int) -> Any:
    return and_(
        ScheduledSend.attempts < max_attempts,
        or_(
            and_(ScheduledSend.status == "pending", ScheduledSend.next_attempt_at <= now),
            and_(ScheduledSend.status == "sending", ScheduledSend.claimed_until < now),
        ),
    )


async def _due_ids(services: Services, now: datetime, kinds: Sequence[str]) -> list[int]:
    max_attempts = services.settings.scheduled_send_attempts
    # A claim that expired with no attempt left: the worker died on its last try.
    dead = and_(ScheduledSend.kind.in_(kinds), ScheduledSend.status == "sending",
                ScheduledSend.claimed_until < now, ScheduledSend.attempts >= max_attempts)
    async with services.sessions() as db:
        if await db.scalar(select(ScheduledSend.id).where(dead).limit(1)) is not None:
            # Looked for first: most ticks have none, and SQLite has one writer at a time.
            await db.execute(update(ScheduledSend).where(dead).values(
                status="failed", claimed_until=None, updated_at=now,
                last_error="claim expired on the last attempt"))
            await db.commit()
        ids = await db.scalars(
            select(ScheduledSend.id)
            .where(ScheduledSend.kind.in_(kinds), _claimable(now, max_attempts))
            .order_by(ScheduledSend.next_attempt_at, ScheduledSend.id)
            .limit(_BATCH)
        )
        return list(ids)


async def _claim(services: Services, send_id: int, now: datetime) -> bool:
    settings = services.settings
    async with services.sessions() as db:
        result = await db.execute(
            update(ScheduledSend)
            .where(ScheduledSend.id == send_id, _claimable(now, settings.scheduled_send_attempts))
            .values(status="sending", attempts=ScheduledSend.attempts + 1, updated_at=now,
                    claimed_until=now + timedelta(seconds=settings.scheduled_send_claim_s))
        )
        await db.commit()
        return rowcount(result) == 1


async def _record(services: Services, send_id: int, now: datetime, status: str, error: str | None) -> str:
    """The outcome of a claimed attempt. Retried a little: a hiccup here must not leave a sent row
    claimed (it would be sent again once the claim expires)."""
    settings = services.settings
    for attempt in range(_RECORD_TRIES):
        try:
            async with services.sessions() as db:
                row = await db.get(ScheduledSend, send_id)
                if row is None:
                    return status
                final = status
                if status == "retry":
                    final = "failed" if row.attempts >= settings.scheduled_send_attempts else "pending"
                    delay = settings.scheduled_send_backoff_s * 2 ** max(0, row.attempts - 1)
                    row.next_attempt_at = now + timedelta(seconds=delay)
                row.status, row.claimed_until, row.updated_at = final, None, now
                row.last_error = error[:300] if error else None
                await db.commit()
                if final == "failed":
                    log.error("scheduled send failed for good", extra={"send_id": send_id, "error": error})
                return final
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("could not record a scheduled send's outcome", extra={"send_id": send_id})
            await asyncio.sleep(0.05 * 2**attempt)
    return status


async def _last_outbound_id(services: Services) -> int:
    async with services.sessions() as db:
        return int(await db.scalar(select(func.max(OutboundMessage.id))) or 0)


async def _maybe_sent(services: Services, outgoing: Outgoing, after_id: int) -> bool:
    """Whether this attempt left a record of a message Twilio took or may be taking (accepted, or
    handed over with no outcome recorded): then it is not sent again."""
    try:
        async with services.sessions() as db:
            found = await db.scalar(
                select(OutboundMessage.id).where(
                    OutboundMessage.id > after_id, OutboundMessage.user_id == outgoing.user.id,
                    OutboundMessage.kind == outgoing.kind,
                    OutboundMessage.status.not_in(("failed", "unknown")),
                ).limit(1)
            )
    except Exception:
        log.exception("could not look for the send's record")
        return True  # unknown: not sending again is the safe side
    return found is not None


async def _render(services: Services, send_id: int, now: datetime,
                  render: Mapping[str, Render]) -> Outgoing | str | None:
    """The row's message, None when there is nothing to send anymore, or the rendering error."""
    try:
        async with services.sessions() as db:
            row = await db.get(ScheduledSend, send_id)
            return None if row is None else await render[row.kind](services, db, row, now)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("scheduled send not rendered", extra={"send_id": send_id})
        return f"{type(exc).__name__}: {exc}"


async def _send(services: Services, outgoing: Outgoing) -> SendResult:
    # Late: bot.channel.outbound (and the buttons on it) is the message path's module.
    from bot.channel.buttons import send_menu
    from bot.channel.outbound import send_template, send_to_user

    if outgoing.template is not None:
        sid, variables = outgoing.template
        return await send_template(services, outgoing.user, sid, variables, text=outgoing.text,
                                   kind=outgoing.kind)
    if outgoing.menu is not None:
        return await send_menu(services, outgoing.user, outgoing.menu, channel=outgoing.channel,
                               kind=outgoing.kind)
    return await send_to_user(services, outgoing.user, text=outgoing.text, channel=outgoing.channel,
                              kind=outgoing.kind)


async def _withheld(services: Services, send_id: int) -> bool:
    """A child the bot may not tutor without consent (CONSENT_MODE) is not written to first either:
    no nudge, reminder, weekly note or homework notice until a parent or the school consents."""
    safety = services.settings.safety
    if safety.consent_mode == "none":
        return False
    async with services.sessions() as db:
        row = await db.get(ScheduledSend, send_id)
        user = None if row is None else await db.get(User, row.user_id)
        return user is not None and await consent_lacking(db, user, safety.consent_mode,
                                                          safety.consent_grace_messages)


async def _late_by(services: Services, send_id: int, now: datetime, timely: frozenset[str]) -> float | None:
    """Seconds since the row became due, when over SEND_MAX_AGE_S: since its slot for a `timely`
    kind (a reminder for 08:00 is late at noon however late it was planned), else since it was
    planned or its slot, whichever is later (a digest planned at 14:00 for the day is not late)."""
    async with services.sessions() as db:
        row = await db.get(ScheduledSend, send_id)
    if row is None:
        return None
    due = row.slot_at if row.kind in timely else max(row.created_at, row.slot_at)
    age = (now - due).total_seconds()
    return age if age > services.settings.send_max_age_s else None


async def _expire(services: Services, send_id: int, now: datetime, outgoing: Outgoing, why: str) -> str:
    channel = outgoing.channel or outgoing.user.last_channel or "whatsapp"
    metrics.SENDS_EXPIRED.labels(channel, "scheduled").inc()
    log.warning("scheduled send dropped: due longer than SEND_MAX_AGE_S ago",
                extra={"send_id": send_id, "kind": outgoing.kind, "error": why})
    return await _record(services, send_id, now, "expired", why)


async def _attempt(services: Services, send_id: int, now: datetime, render: Mapping[str, Render],
                   timely: frozenset[str]) -> str:
    if await _withheld(services, send_id):
        return await _record(services, send_id, now, "skipped", "no consent for this child")
    outgoing = await _render(services, send_id, now, render)
    if isinstance(outgoing, str):
        return await _record(services, send_id, now, "retry", outgoing)
    if outgoing is None:
        return await _record(services, send_id, now, "skipped", "nothing to send anymore")
    late = await _late_by(services, send_id, now, timely)
    if late is not None:
        why = f"expired: due {late:.0f} s ago, over SEND_MAX_AGE_S"
        return await _expire(services, send_id, now, outgoing, why)
    try:
        after_id = await _last_outbound_id(services)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("scheduled send not started", extra={"send_id": send_id})
        return await _record(services, send_id, now, "retry", f"{type(exc).__name__}: {exc}")
    try:
        result = await _send(services, outgoing)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("scheduled send raised", extra={"send_id": send_id})
        # Twilio may have taken it before the error (recording the send failed): never send it twice.
        status = "unknown" if await _maybe_sent(services, outgoing, after_id) else "retry"
        return await _record(services, send_id, now, status, f"{type(exc).__name__}: {exc}")
    if result.sids:
        # Accepted (a part that failed after another was accepted is not sent again: never twice).
        return await _record(services, send_id, now, "sent", result.error)
    if result.skipped == "expired":  # its sender's pace had no moment free in time; counted there
        return await _record(services, send_id, now, "expired", result.detail or result.error or "expired")
    if result.skipped:
        status = "retry" if result.skipped in RETRIED_SKIPS else "skipped"
        return await _record(services, send_id, now, status, result.skipped)
    log.warning("scheduled send not accepted", extra={"send_id": send_id, "error": result.error})
    status = "retry" if getattr(result, "retryable", True) else "failed"
    return await _record(services, send_id, now, status, result.error)


async def deliver_due(services: Services, now: datetime, render: Mapping[str, Render], *,
                      timely: frozenset[str] = frozenset()) -> int:
    """Sends the planned rows of these kinds that are due; returns how many Twilio accepted.
    `timely`: the kinds whose SEND_MAX_AGE_S counts from their slot (see the module's text)."""
    sent = 0
    for send_id in await _due_ids(services, now, list(render)):
        if await _claim(services, send_id, now):
            sent += await _attempt(services, send_id, now, render, timely) == "sent"
    return sent
