"""Dates and amounts as a French or English reader writes them, for what operators and teachers
read (the dashboard, the teachers' e-mail, the console, the CSV exports): « mar. 10 mars 2026,
09:00 » / « Tue 10 Mar 2026, 09:00 » in the school's time zone, never UTC ISO; « 12 500 FCFA »
with French typography's narrow no-break space between thousands.

The day and month names are a table of our own rather than Babel's CLDR data: Babel is only here
as a dependency of a dependency (the web page reader), two languages need 38 words, and CLDR's
updates change spaces and abbreviations (« juil. » or « jul. », U+202F or U+00A0) under the pages
and their tests. A part of the base: every package may import it.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import ROUND_HALF_UP, Decimal

from bot.clock import zone
from bot.texts import fr_en

__all__ = ["csv_time", "day", "money", "number", "when"]

_DAYS = (("lun.", "mar.", "mer.", "jeu.", "ven.", "sam.", "dim."),
         ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"))
_MONTHS = (("janv.", "févr.", "mars", "avr.", "mai", "juin", "juil.", "août", "sept.", "oct.", "nov.",
            "déc."),
           ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"))
THIN = "\u202f"  # narrow no-break space: French thousands, and before « FCFA » so it never wraps alone
# A currency shown by its everyday name; the CFA francs of West and Central Africa are « FCFA ».
_SHOWN = {"XOF": "FCFA", "XAF": "FCFA"}
# Currencies with no minor unit in use (ISO 4217 exponent 0): whole amounts.
_WHOLE = frozenset({"XOF", "XAF", "GNF", "RWF", "UGX", "KMF", "BIF", "DJF", "JPY", "KRW"})


def _local(at: datetime, zone_name: str | None) -> datetime:
    """The moment in the zone; a naive datetime is UTC (as the database stores every moment)."""
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).astimezone(zone(zone_name))


def day(at: date | datetime, language: str | None, zone_name: str | None = None, *, year: bool = True) -> str:
    """« mar. 10 mars 2026 » / « Tue 10 Mar 2026 » (a datetime's day in the zone)."""
    if isinstance(at, datetime):
        at = _local(at, zone_name).date()
    days, months = fr_en(language, _DAYS[0], _DAYS[1]), fr_en(language, _MONTHS[0], _MONTHS[1])
    shown = f"{days[at.weekday()]} {at.day} {months[at.month - 1]}"
    return f"{shown} {at.year}" if year else shown


def when(at: datetime, language: str | None, zone_name: str | None) -> str:
    """« mar. 10 mars 2026, 09:00 » / « Tue 10 Mar 2026, 09:00 »: the moment in the zone."""
    local = _local(at, zone_name)
    return f"{day(local.date(), language)}, {local:%H:%M}"


def csv_time(at: datetime | None, language: str | None, zone_name: str | None) -> str:
    """A moment for a spreadsheet, in the zone: « 10/03/2026 09:00 », which a French Excel reads as a
    date, / « 2026-03-10 09:00 »; "" for none."""
    if at is None:
        return ""
    return f"{_local(at, zone_name):{fr_en(language, '%d/%m/%Y %H:%M', '%Y-%m-%d %H:%M')}}"


def number(value: float, language: str | None, decimals: int = 0) -> str:
    """« 12 500 » (narrow no-break spaces, « 1 234,50 » with decimals) / « 12,500 », « 1,234.50 »."""
    # Half up, as a person rounds (34.50 FCFA is 35), not Python's half to even.
    text = f"{Decimal(str(value)).quantize(Decimal(1).scaleb(-decimals), ROUND_HALF_UP):,}"
    return fr_en(language, text.replace(",", THIN).replace(".", ","), text)


def money(amount: float, currency: str, language: str | None) -> str:
    """« 12 500 FCFA » / « 12,500 FCFA »; « 3,50 USD » for a currency with cents."""
    code = currency.upper()
    decimals = 0 if code in _WHOLE else 2
    return f"{number(amount, language, decimals)}{THIN}{_SHOWN.get(code, code)}"
