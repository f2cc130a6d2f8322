"""What the learners cost the operator, per week and per month: the messages (received and sent,
as the cost meter priced them: bot.channel.prices), the approved templates among the sent ones,
and the model's tokens (COST_PER_1K_TOKENS, already in the school's currency), in the school's
currency (PAYMENT_CURRENCY, at the rate table's rate), with the cost per active learner: one who
wrote at least once in the period. For the school (everyone), a class, or one learner."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel.metering import rates_or_none
from bot.channel.prices import MICRO, to_currency
from bot.config import Settings
from bot.storage.models import InboundMessage, OutboundMessage, TurnRecord

__all__ = ["PERIODS", "CostLine", "cost_lines", "learner_lines", "lines_text", "school_currency"]

PERIODS = (("week", 7), ("month", 30))


@dataclass(frozen=True)
class CostLine:
    """One period's costs, in `currency`."""

    period: str  # week | month
    days: int
    currency: str
    active: int  # learners who wrote in the period
    messages: Decimal  # received and sent, templates apart
    templates: Decimal
    tokens: Decimal

    @property
    def total(self) -> Decimal:
        return self.messages + self.templates + self.tokens

    @property
    def per_learner(self) -> Decimal | None:
        return self.total / self.active if self.active else None

    def shown(self) -> dict[str, Any]:
        per = self.per_learner
        return {"period": self.period, "days": self.days, "currency": self.currency, "active": self.active,
                "messages": str(round(self.messages, 2)), "templates": str(round(self.templates, 2)),
                "tokens": str(round(self.tokens, 2)), "total": str(round(self.total, 2)),
                "per_learner": None if per is None else str(round(per, 2))}


def school_currency(settings: Settings) -> tuple[str, Decimal | None]:
    """(currency, units per dollar): PAYMENT_CURRENCY at the table's rate, or dollars when the table
    has none for it; (currency, None) when the table cannot be read (messages left at 0)."""
    rates = rates_or_none(settings.costs.cost_rates_file)
    if rates is None:
        return settings.payment_currency, None
    code = settings.payment_currency.upper()
    return (code, to_currency(rates, Decimal(1), code)) if code in rates.currency else ("USD", Decimal(1))


def _within(query: Any, column: Any, scope: Any) -> Any:
    return query if scope is None else query.where(column.in_(scope))


async def _line(db: AsyncSession, settings: Settings, scope: Any, now: datetime,
                period: tuple[str, int]) -> CostLine:
    name, days = period
    start = now - timedelta(days=days)
    received = await db.scalar(_within(
        select(func.coalesce(func.sum(InboundMessage.cost_micro), 0))
        .where(InboundMessage.created_at >= start),
        InboundMessage.user_id, scope))
    sent: dict[bool, int] = dict((bool(t), int(micro)) for t, micro in (await db.execute(_within(
        select(OutboundMessage.template, func.coalesce(func.sum(OutboundMessage.cost_micro), 0))
        .where(OutboundMessage.created_at >= start).group_by(OutboundMessage.template),
        OutboundMessage.user_id, scope))).all())
    tokens = await db.scalar(_within(
        select(func.coalesce(func.sum(TurnRecord.prompt_tokens + TurnRecord.completion_tokens), 0))
        .where(TurnRecord.created_at >= start), TurnRecord.user_id, scope))
    active = await db.scalar(_within(
        select(func.count(func.distinct(InboundMessage.user_id))).where(InboundMessage.created_at >= start),
        InboundMessage.user_id, scope))
    currency, rate = school_currency(settings)
    per_dollar = (rate or Decimal(0)) / MICRO
    token_price = Decimal(str(settings.costs.cost_per_1k_tokens))
    return CostLine(name, days, currency, int(active or 0),
                    messages=(int(received or 0) + sent.get(False, 0)) * per_dollar,
                    templates=sent.get(True, 0) * per_dollar,
                    tokens=int(tokens or 0) * token_price / 1000)


async def cost_lines(db: AsyncSession, settings: Settings, scope: Any, now: datetime) -> list[CostLine]:
    """The week's and the month's costs of the learners whose ids `scope` selects (None: everyone)."""
    return [await _line(db, settings, scope, now, period) for period in PERIODS]


async def learner_lines(db: AsyncSession, settings: Settings, user_id: int, now: datetime) -> list[CostLine]:
    """One learner's week and month (`users show`)."""
    return await cost_lines(db, settings, [user_id], now)


def lines_text(lines: list[CostLine]) -> str:
    """As `users show` prints them: « week: 123.45 XOF (messages 100.00, templates 3.45, tokens 20.00) »."""
    return "; ".join(f"{line.period} {round(line.total, 2)} {line.currency} (messages "
                     f"{round(line.messages, 2)}, templates {round(line.templates, 2)}, tokens "
                     f"{round(line.tokens, 2)})" for line in lines)
