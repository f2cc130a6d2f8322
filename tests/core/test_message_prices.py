"""The cost meter's prices from the rate table kept in the repository (bot/channel/rates.toml): a
WhatsApp service reply, a utility template, an SMS of two segments, what is received, the
operator's file over the table, and the table as `costs rates` prints it."""

from __future__ import annotations

import argparse
import asyncio
from decimal import Decimal
from pathlib import Path

import pytest

from bot.channel.formatting import sms_cost, to_sms
from bot.channel.metering import inbound_micro, template_category
from bot.channel.prices import (
    RatesError,
    from_micro,
    load_rates,
    price_inbound,
    price_outbound,
    rates_text,
    to_currency,
)
from bot.config import load_settings
from bot.console import costs_command
from bot.doctor.local import cost_meter

ABIDJAN = "whatsapp:+2250700000001"
LAGOS = "whatsapp:+2348030000001"
DAKAR_SMS = "+221770000001"


def test_the_table_says_its_date_and_sources() -> None:
    table = load_rates()
    assert table.taken == "2026-11-30" and table.effective == "2026-10-01"
    assert any("developers.facebook.com/docs/whatsapp/pricing" in s for s in table.sources)
    assert any("twilio.com/en-us/whatsapp/pricing" in s for s in table.sources)
    assert table.market("CI") == "rest_of_africa" and table.market("SN") == "rest_of_africa"
    assert table.market("NG") == "nigeria" and table.market("FR") == "other" and table.market(None) == "other"


def test_a_whatsapp_service_reply_is_twilio_fee_and_the_markets_utility_rate() -> None:
    price = price_outbound(load_rates(), "whatsapp", ABIDJAN)
    assert (price.country, price.market, price.category) == ("CI", "rest_of_africa", "service")
    # Twilio's $0.005 and, since 1 October 2026, Meta's « Rest of Africa » utility rate of $0.004.
    assert price.twilio == Decimal("0.005") and price.meta == Decimal("0.004")
    assert price.total == Decimal("0.009") and price.micro == 9000


def test_a_utility_template_is_priced_at_its_category_in_its_market() -> None:
    table = load_rates()
    assert price_outbound(table, "whatsapp", ABIDJAN, category="utility").total == Decimal("0.009")
    nigeria = price_outbound(table, "whatsapp", LAGOS, category="utility")
    assert nigeria.market == "nigeria" and nigeria.total == Decimal("0.005") + Decimal("0.0067")
    marketing = price_outbound(table, "whatsapp", ABIDJAN, category="marketing")
    assert marketing.total == Decimal("0.0275") and marketing.micro == 27500


def test_a_templates_category_is_the_one_meta_approved(tmp_path: Path) -> None:
    mine = tmp_path / "rates.toml"
    mine.write_text('[templates]\nHXaaaa = "marketing"\nHXbbbb = "authentication"\n', "utf-8")
    table = load_rates(str(mine))
    assert [table.template_category(sid) for sid in ("HXaaaa", "HXbbbb", "HXcccc", None)] == [
        "marketing", "authentication", "utility", "utility"]
    assert load_rates().template_category("HXaaaa") == "utility"  # not listed: the bot's reminders
    assert template_category(str(mine), {"content_sid": "HXaaaa", "to": ABIDJAN}) == "marketing"
    assert template_category(None, {"content_sid": "HXaaaa"}) == "utility"
    assert template_category(str(mine), {"body": "Bonjour"}) is None  # no template: priced as a reply
    assert "Templates: HXaaaa marketing, HXbbbb authentication; any other is utility" in rates_text(table)


def test_an_sms_of_two_segments_is_two_of_its_countrys_price() -> None:
    table = load_rates()
    text = to_sms("Rappel : " + "la photosynthese transforme la lumiere. " * 5)
    segments = sms_cost(text)
    assert segments == 2  # as the send path counts them
    price = price_outbound(table, "sms", DAKAR_SMS, segments=segments)
    assert price.country == "SN" and price.category is None and price.segments == 2
    assert price.sms == 2 * Decimal("0.2435") == price.total and price.micro == 487000
    assert price_outbound(table, "sms", "+2250700000001", segments=2).total == Decimal("0.4182")
    # Segments unknown: one; a country the table does not list: its default.
    assert price_outbound(table, "sms", DAKAR_SMS).total == Decimal("0.2435")
    assert price_outbound(table, "sms", "+4915100000001", segments=1).total == Decimal("0.30")


def test_what_is_received_costs_twilios_fee_only() -> None:
    table = load_rates()
    assert price_inbound(table, "whatsapp", ABIDJAN).total == Decimal("0.005")
    assert price_inbound(table, "sms", "+2250700000001", 2).total == Decimal("0.0166")
    assert price_inbound(table, "cli", "+2250700000001").total == 0
    # As a stored row is priced: Twilio's NumSegments from the webhook's form.
    assert inbound_micro(table, "sms", "+2250700000001", {"NumSegments": "3"}) == 24900
    assert inbound_micro(table, "sms", "+2250700000001", {"NumSegments": "x"}) == 8300
    assert inbound_micro(None, "sms", "+2250700000001", {}) is None


def test_dollars_in_the_schools_currency() -> None:
    table = load_rates()
    assert to_currency(table, Decimal("0.009"), "XOF") == Decimal("0.009") * Decimal("564.12")
    assert to_currency(table, from_micro(1_000_000), "xof") == Decimal("564.12")
    with pytest.raises(RatesError, match="JPY"):
        to_currency(table, Decimal(1), "JPY")


def test_the_operators_file_overrides_the_table_key_by_key(tmp_path: Path) -> None:
    mine = tmp_path / "rates.toml"
    mine.write_text('taken = "2027-01-15"\n[sms]\nCI = "0.10"\n[whatsapp.rest_of_africa]\nservice = "0"\n'
                    '[currency]\nXOF = "600"\n', "utf-8")
    table = load_rates(str(mine))
    assert table.taken == "2027-01-15" and table.override == str(mine)
    assert price_outbound(table, "sms", "+2250700000001", segments=2).total == Decimal("0.20")
    assert price_outbound(table, "sms", DAKAR_SMS).total == Decimal("0.2435")  # kept
    assert price_outbound(table, "whatsapp", ABIDJAN).total == Decimal("0.005")
    assert price_outbound(table, "whatsapp", ABIDJAN, category="utility").total == Decimal("0.009")
    assert table.currency["XOF"] == 600 and table.currency["XAF"] == Decimal("564.12")


@pytest.mark.parametrize("text", ['[sms]\nCI = "cheap"\n', "[sms\n", '[whatsapp.mars]\nservice = "1"\n',
                                  '[templates]\nHXaaaa = "promo"\n'])
def test_a_bad_operators_file_is_one_error_naming_it(tmp_path: Path, text: str) -> None:
    mine = tmp_path / "bad.toml"
    mine.write_text(text, "utf-8")
    with pytest.raises(RatesError):
        load_rates(str(mine))
    with pytest.raises(RatesError, match=r"missing\.toml"):
        load_rates(str(tmp_path / "missing.toml"))


def test_costs_rates_prints_the_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert rates_text(load_rates()).startswith("Rates taken 2026-11-30")
    settings = load_settings({})
    assert asyncio.run(costs_command(settings, argparse.Namespace())) == 0
    out = capsys.readouterr().out
    assert "Rates taken 2026-11-30" in out and "effective 2026-10-01" in out
    assert "rest_of_africa (51 countries): 0.004, 0.004, 0.0225, 0.004" in out
    assert "CI 0.2091" in out and "XOF 564.12" in out and "twilio.com/en-us/sms/pricing/ci" in out
    bad = load_settings({"COST_RATES_FILE": str(tmp_path / "none.toml")})
    assert asyncio.run(costs_command(bad, argparse.Namespace())) == 2
    assert "COST_RATES_FILE" in capsys.readouterr().err


def test_doctor_says_what_prices_the_messages(tmp_path: Path) -> None:
    good = cost_meter(load_settings({}))
    assert good.status == "OK" and "rates taken 2026-11-30; 564.12 XOF per USD" in good.reason
    assert cost_meter(load_settings({"PAYMENT_CURRENCY": "JPY"})).status == "WARN"
    bad = cost_meter(load_settings({"COST_RATES_FILE": str(tmp_path / "none.toml")}))
    assert bad.status == "FAIL" and "COST_RATES_FILE" in bad.reason
