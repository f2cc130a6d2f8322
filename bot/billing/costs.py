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

from sqlalchemy import case, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel.metering import rates_or_none
from bot.channel.prices import MICRO, to_currency
from bot.config import Settings
from bot.storage.models import InboundMessage, OutboundMessage, TurnRecord

__all__ = ["PERIODS", "CostLine", "cost_lines", "learner_lines", "lines_text", "school_currency"]

PERIODS = (("week", 7), ("month", 30))  # shortest first: the queries read the last one's days


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


def _per_period(created_at: Any, starts: list[datetime], value: Any) -> list[Any]:
    """One sum per period: `value` counted in each period's column (the query reads the longest)."""
    return [func.coalesce(func.sum(case((created_at >= start, value))), 0) for start in starts]


async def _sums(db: AsyncSession, scope: Any, starts: list[datetime]) -> dict[str, list[int]]:
    """Per period (the `starts`, longest last): received, sent, templates (millionths of a dollar),
    tokens and active learners; one query per table, each read once for every period."""
    since = starts[-1]
    inbound = InboundMessage.created_at
    got = (await db.execute(_within(select(
        *_per_period(inbound, starts, InboundMessage.cost_micro),
        *[func.count(func.distinct(case((inbound >= start, InboundMessage.user_id)))) for start in starts])
        .where(inbound >= since), InboundMessage.user_id, scope))).one()
    outbound = OutboundMessage.created_at
    sent = {bool(row[0]): row[1:] for row in (await db.execute(_within(
        select(OutboundMessage.template,
               *_per_period(outbound, starts, OutboundMessage.cost_micro))
        .where(outbound >= since).group_by(OutboundMessage.template), OutboundMessage.user_id, scope))).all()}
    tokens = (await db.execute(_within(select(*_per_period(
        TurnRecord.created_at, starts, TurnRecord.prompt_tokens + TurnRecord.completion_tokens))
        .where(TurnRecord.created_at >= since),
        TurnRecord.user_id, scope))).one()
    n = len(starts)
    return {"received": [int(v) for v in got[:n]], "active": [int(v) for v in got[n:]],
            "sent": [int(v) for v in sent.get(False, [0] * n)],
            "templates": [int(v) for v in sent.get(True, [0] * n)], "tokens": [int(v) for v in tokens]}


async def cost_lines(db: AsyncSession, settings: Settings, scope: Any, now: datetime) -> list[CostLine]:
    """The week's and the month's costs of the learners whose ids `scope` selects (None: everyone)."""
    sums = await _sums(db, scope, [now - timedelta(days=days) for _, days in PERIODS])
    currency, rate = school_currency(settings)
    per_dollar = (rate or Decimal(0)) / MICRO
    token_price = Decimal(str(settings.costs.cost_per_1k_tokens))
    return [CostLine(name, days, currency, sums["active"][n],
                     messages=(sums["received"][n] + sums["sent"][n]) * per_dollar,
                     templates=sums["templates"][n] * per_dollar,
                     tokens=sums["tokens"][n] * token_price / 1000)
            for n, (name, days) in enumerate(PERIODS)]


async def learner_lines(db: AsyncSession, settings: Settings, user_id: int, now: datetime) -> list[CostLine]:
    """One learner's week and month (`users show`)."""
    return await cost_lines(db, settings, [user_id], now)


def lines_text(lines: list[CostLine]) -> str:
    """As `users show` prints them: « week: 123.45 XOF (messages 100.00, templates 3.45, tokens 20.00) »."""
    return "; ".join(f"{line.period} {round(line.total, 2)} {line.currency} (messages "
                     f"{round(line.messages, 2)}, templates {round(line.templates, 2)}, tokens "
                     f"{round(line.tokens, 2)})" for line in lines)
