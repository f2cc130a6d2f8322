"""The cost meter at work: a sent message is priced by the first status callback that says Twilio
sent it (sent, delivered or read: Twilio bills neither a failed send nor Meta an undelivered one),
a received one as its row is stored (bot.channel.inbound_store), both from bot.channel.prices.

A sent message's price is worked out as its row is recorded (`price_micro`, with the category it is
priced as), so that the callback's one UPDATE sets it (`priced_values`); a row recorded without
one (no rate table then) is priced from what that UPDATE returns, by a second one (`price_sent`)."""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

from sqlalchemy import and_, case, func, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot import logs
from bot.channel.prices import RatesError, RateTable, load_rates, price_inbound, price_outbound
from bot.storage.models import OutboundMessage

__all__ = ["PRICED", "RETURNED", "inbound_micro", "price_sent", "priced_values", "rates_or_none",
           "recorded_price", "template_category"]

log = logging.getLogger("bot.channel.metering")

PRICED = frozenset({"sent", "delivered", "read"})
# What the status callback's UPDATE returns, for the price (after the user id).
RETURNED = (OutboundMessage.channel, OutboundMessage.to_addr, OutboundMessage.template,
            OutboundMessage.segments, OutboundMessage.cost_micro, OutboundMessage.category)


def rates_or_none(path: str | None) -> RateTable | None:
    """The rate table; None, said at WARNING at most every 10 s, when the operator's file is bad
    (the messages then stay unpriced rather than a webhook failing; `costs rates` says why)."""
    try:
        return load_rates(path or None)
    except RatesError as exc:
        logs.warning_sampled(log, "rate table unreadable, messages not priced", {"error": str(exc)[:300]})
        return None


def _segments(form: Any, stored: int | None) -> int | None:
    """Twilio's NumSegments when its callback gives it, else the count the message had when sent."""
    value = str(form.get("NumSegments") or "")
    return int(value) if value.isdigit() and int(value) > 0 else stored


async def price_sent(db: AsyncSession, path: str | None, sid: str, new_status: str, row: Any,
                     form: Any) -> None:
    """Prices the sent message `row` (RETURNED's columns) once, in the callback's transaction."""
    channel, to_addr, template, segments, cost, category = row
    if new_status not in PRICED or cost is not None or (rates := rates_or_none(path)) is None:
        return
    segments = _segments(form, segments) if channel == "sms" else segments
    # A template's category was noted as it was sent (`template_category`); a reply is a service one.
    category = category or ("utility" if template else "service")
    price = price_outbound(rates, channel, to_addr, category=category, segments=segments)
    await db.execute(update(OutboundMessage)
                     .where(OutboundMessage.sid == sid, OutboundMessage.cost_micro.is_(None))
                     .values(cost_micro=price.micro, category=price.category, segments=segments)
                     .execution_options(synchronize_session=False))


def recorded_price(path: str | None, channel: str, to_addr: str, category: str | None,
                   template: bool) -> tuple[int | None, str | None]:
    """(price_micro, category) of a message as its row is recorded: its price once sent (an SMS's
    per segment, for the callback may count them otherwise) and WhatsApp's category (None for an
    SMS); (None, category) when there is no rate table or no price for this channel."""
    rates = rates_or_none(path)
    if rates is None:
        return None, category
    category = category or ("utility" if template else "service")
    price = price_outbound(rates, channel, to_addr, category=category, segments=1)
    return price.micro, price.category


def priced_values(new_status: str, form: Any) -> dict[str, Any]:
    """What a status callback's UPDATE sets to price its message: the price recorded with the row
    (an SMS's times Twilio's NumSegments when given, else its own count), once, when the callback
    says Twilio sent it. Nothing for another status."""
    if new_status not in PRICED:
        return {}
    row = OutboundMessage
    pricing = and_(row.cost_micro.is_(None), row.price_micro.is_not(None))
    sms = row.channel == "sms"
    counted = _segments(form, None)
    segments = counted if counted is not None else func.coalesce(row.segments, 1)
    values: dict[str, Any] = {"cost_micro": case((pricing, row.price_micro * case((sms, segments), else_=1)),
                                                 else_=row.cost_micro)}
    if counted is not None:
        values["segments"] = case((and_(pricing, sms), counted), else_=row.segments)
    return values


def template_category(path: str | None, fields: dict[str, Any]) -> str | None:
    """The category of the approved template these send fields name (`content_sid`), as the rate
    table lists it (else utility); None when they name none. Noted on the row as it is sent, for the
    status callback that prices it no longer has the fields."""
    content_sid = fields.get("content_sid")
    if not content_sid:
        return None
    rates = rates_or_none(path)
    return rates.template_category(str(content_sid)) if rates is not None else "utility"


def inbound_micro(rates: RateTable | None, channel: str, from_addr: str,
                  params: dict[str, Any]) -> int | None:
    """A received message's price in millionths of a dollar (an SMS's NumSegments as Twilio gave them)."""
    return None if rates is None else _inbound_micro(rates, channel, from_addr, _segments(params, None))


@lru_cache(maxsize=65_536)
def _inbound_micro(rates: RateTable, channel: str, from_addr: str, segments: int | None) -> int:
    # Kept per sender: a webhook's row costs less to write than its price to compute.
    return price_inbound(rates, channel, from_addr, segments).micro
