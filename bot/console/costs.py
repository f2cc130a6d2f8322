"""`python -m bot costs rates`: the cost meter's rate table as it prices messages, the packaged one
(bot/channel/rates.toml) with the operator's COST_RATES_FILE over it, its date and sources."""

from __future__ import annotations

import argparse
import sys

from bot.channel.prices import RatesError, load_rates, rates_text
from bot.config import Settings


async def costs_command(settings: Settings, args: argparse.Namespace) -> int:
    """Prints the table; exit 2 with one line when the operator's file cannot be read."""
    try:
        table = load_rates(settings.costs.cost_rates_file or None)
    except RatesError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(rates_text(table))
    return 0
