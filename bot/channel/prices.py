"""The cost meter's prices: what one message, received or sent, costs the operator in US dollars,
from the rate table kept as data beside this module (`rates.toml`: its date, its sources), which an
operator's file (COST_RATES_FILE) overrides key by key.

A WhatsApp message costs Twilio's fee, in and out, plus Meta's price of its category (service,
utility, marketing, authentication) in the market of the recipient's country; an SMS costs its
segments times the country's price of one. Prices are Decimal and stored as whole millionths of a
dollar (`micro`), so that both databases add them up exactly alike.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from bot.channel.locale import region_of

__all__ = ["CATEGORIES", "MICRO", "Price", "RateTable", "RatesError", "from_micro", "load_rates",
           "price_inbound", "price_outbound", "rates_text", "to_currency"]

CATEGORIES = ("service", "utility", "marketing", "authentication")
MICRO = Decimal("1000000")


class RatesError(ValueError):
    """A rate table that cannot be read (the operator's file: its path and what is wrong)."""


@dataclass(frozen=True, eq=False)  # hashed as itself: a price may be kept per table (metering)
class RateTable:
    taken: str
    effective: str
    sources: tuple[str, ...]
    twilio_whatsapp: Decimal
    sms_inbound: Decimal
    whatsapp: dict[str, dict[str, Decimal]]  # market → category → price
    markets: dict[str, str]  # country → market
    sms: dict[str, Decimal]  # country (or "default") → one segment
    currency: dict[str, Decimal]  # code → units per dollar
    templates: dict[str, str]  # an approved template's content SID → its category (else utility)
    override: str | None = None  # the operator's file, when one was read

    def market(self, country: str | None) -> str:
        return self.markets.get(country or "", "other")

    def sms_price(self, country: str | None) -> Decimal:
        return self.sms.get(country or "", self.sms["default"])

    def template_category(self, content_sid: str | None) -> str:
        return self.templates.get(content_sid or "", "utility")


@dataclass(frozen=True)
class Price:
    """One message's price, in dollars, and what it was priced as."""

    channel: str
    category: str | None  # WhatsApp's; None for an SMS
    country: str | None
    market: str | None
    twilio: Decimal
    meta: Decimal
    sms: Decimal
    segments: int

    @property
    def total(self) -> Decimal:
        return self.twilio + self.meta + self.sms

    @property
    def micro(self) -> int:
        return int((self.total * MICRO).quantize(Decimal(1), ROUND_HALF_UP))


def from_micro(micro: int) -> Decimal:
    return Decimal(micro) / MICRO


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        merged[key] = _merge(base[key], value) if isinstance(value, dict) and isinstance(
            base.get(key), dict) else value
    return merged


def _decimals(section: dict[str, Any], where: str) -> dict[str, Decimal]:
    try:
        return {str(k): Decimal(str(v)) for k, v in section.items()}
    except ArithmeticError as exc:
        raise RatesError(f"[{where}]: a price that is not a number ({exc})") from exc


def _table(data: dict[str, Any], override: str | None) -> RateTable:
    try:
        whatsapp = {m: _decimals(prices, f"whatsapp.{m}") for m, prices in data["whatsapp"].items()}
        for market, prices in whatsapp.items():
            if missing := [c for c in CATEGORIES if c not in prices]:
                raise RatesError(f"[whatsapp.{market}] lacks {', '.join(missing)}")
        if "other" not in whatsapp or "default" not in data["sms"]:
            raise RatesError("the table needs [whatsapp.other] and [sms] default")
        markets = {str(c).upper(): m for m, countries in data["markets"].items() for c in countries}
        templates = {str(sid): str(c) for sid, c in data.get("templates", {}).items()}
        if odd := sorted(sid for sid, c in templates.items() if c not in CATEGORIES):
            raise RatesError(f"[templates]: {', '.join(odd)} not one of {', '.join(CATEGORIES)}")
        return RateTable(
            taken=str(data["taken"]), effective=str(data["effective"]),
            sources=tuple(str(s) for s in data.get("sources", ())),
            twilio_whatsapp=Decimal(str(data["twilio"]["whatsapp_usd"])),
            sms_inbound=Decimal(str(data["twilio"]["sms_inbound_usd"])),
            whatsapp=whatsapp, markets=markets, sms=_decimals(data["sms"], "sms"),
            currency={k.upper(): v for k, v in _decimals(data["currency"], "currency").items()},
            templates=templates, override=override)
    except (KeyError, TypeError, ArithmeticError) as exc:
        raise RatesError(f"the rate table lacks or mistypes {exc}") from exc


@lru_cache(maxsize=8)
def load_rates(path: str | None = None) -> RateTable:
    """The packaged table, overridden by the operator's file at `path` (COST_RATES_FILE) when given."""
    data = tomllib.loads(resources.files("bot.channel").joinpath("rates.toml").read_text("utf-8"))
    if path:
        try:
            extra = tomllib.loads(Path(path).read_text("utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise RatesError(f"COST_RATES_FILE {path}: {exc}") from exc
        data = _merge(data, extra)
    return _table(data, path or None)


@lru_cache(maxsize=65_536)
def _country(address: str) -> str | None:
    """The country of a number as Twilio writes it (`whatsapp:+225…`); kept per number, because
    every webhook is priced as it is stored and parsing a number costs more than its row."""
    return region_of(address.removeprefix("whatsapp:").strip())


def price_outbound(table: RateTable, channel: str, to_addr: str, *, category: str = "service",
                   segments: int | None = None) -> Price:
    """A sent message: WhatsApp at Twilio's fee plus Meta's `category` in the recipient's market,
    an SMS at its segments (1 when unknown) times its country's price."""
    country = _country(to_addr)
    if channel == "whatsapp":
        market = table.market(country)
        return Price(channel, category, country, market, table.twilio_whatsapp,
                     table.whatsapp[market][category], Decimal(0), 0)
    count = max(segments or 1, 1)
    return Price(channel, None, country, None, Decimal(0), Decimal(0), count * table.sms_price(country),
                 count)


def price_inbound(table: RateTable, channel: str, from_addr: str, segments: int | None = None) -> Price:
    """A received message: Twilio's WhatsApp fee (Meta charges nothing), or an SMS's segments at
    the inbound price."""
    country = _country(from_addr)
    if channel == "whatsapp":
        return Price(channel, None, country, table.market(country), table.twilio_whatsapp,
                     Decimal(0), Decimal(0), 0)
    if channel != "sms":  # the terminal's chat costs nothing
        return Price(channel, None, country, None, Decimal(0), Decimal(0), Decimal(0), 0)
    count = max(segments or 1, 1)
    return Price(channel, None, country, None, Decimal(0), Decimal(0), count * table.sms_inbound, count)


def to_currency(table: RateTable, usd: Decimal, currency: str) -> Decimal:
    """Dollars in `currency` at the table's rate; RatesError for a currency it has no rate for."""
    try:
        return usd * table.currency[currency.upper()]
    except KeyError:
        raise RatesError(f"the rate table has no rate for {currency.upper()} ([currency])") from None


def rates_text(table: RateTable) -> str:
    """The table as `python -m bot costs rates` prints it."""
    lines = [f"Rates taken {table.taken}, in US dollars per message; effective {table.effective}",
             f"Override: {table.override or 'none (COST_RATES_FILE not set)'}",
             "Sources:", *(f"  {s}" for s in table.sources),
             f"Twilio: WhatsApp {table.twilio_whatsapp} per message in and out; "
             f"SMS received {table.sms_inbound} per segment",
             "WhatsApp (Meta), per market: " + ", ".join(CATEGORIES)]
    for market, prices in sorted(table.whatsapp.items()):
        countries = sorted(c for c, m in table.markets.items() if m == market)
        where = f" ({', '.join(countries)})" if 0 < len(countries) <= 5 else (
            f" ({len(countries)} countries)" if countries else " (every other country)")
        lines.append(f"  {market}{where}: " + ", ".join(str(prices[c]) for c in CATEGORIES))
    lines.append("Templates: " + (", ".join(f"{s} {c}" for s, c in sorted(table.templates.items()))
                                  or "none listed") + "; any other is utility")
    lines.append("SMS sent, per segment: " + ", ".join(f"{c} {p}" for c, p in sorted(table.sms.items())))
    lines.append("Currency per US dollar: "
                 + ", ".join(f"{c} {r}" for c, r in sorted(table.currency.items())))
    return "\n".join(lines)
