"""Delivery health: after repeated permanent failures to a number (from the REST call or from a
status callback) proactive messages stop, with the reason and time on the user; a direct answer
still goes; a message from the user resets it."""

from __future__ import annotations

from typing import Any

import pytest

from bot.channel.outbound import send_to_number, send_to_user
from bot.config import ConfigError, load_settings
from bot.storage.models import User
from tests.support.harness import Harness

PHONE = "+2250700000041"


async def remind(h: Harness, user: User, text: str = "Rappel : contrôle demain") -> Any:
    return await send_to_user(h.services, user, text=text, kind="reminder")


async def test_repeated_refusals_stop_proactive_sends_until_the_user_writes(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, last_channel="sms")
    h.twilio.fail_next("21614", times=3)
    for n in range(3):
        result = await remind(h, user)
        assert result.reason == "refused" and result.error_code == 21614 and result.permanent
        refreshed = await h.user(PHONE)
        assert refreshed is not None
        # Blocked at the third failure in a row (DELIVERY_BLOCK_AFTER=3), not before.
        assert (refreshed.delivery_blocked_at is not None) == (n == 2)
    assert refreshed is not None
    assert refreshed.delivery_blocked_reason == "21614 sms: not a mobile number"
    assert refreshed.delivery_blocked_at == h.clock()
    assert h.twilio.requests == 3
    skipped = await remind(h, refreshed)
    assert skipped.skipped == "delivery_blocked" and skipped.permanent and not skipped.sids
    assert skipped.for_model()["reason"] == "delivery_blocked" and h.twilio.requests == 3
    # The answer to a message the user sends is not proactive: it still goes.
    direct = await send_to_user(h.services, refreshed, text="Voici la réponse.")
    assert direct.ok and h.twilio.bodies() == ["Voici la réponse."]

    # The user writes: the block is lifted at once, and reminders go out again.
    h.llm.push_text("Bonjour !")
    assert (await h.inbound(PHONE, "Bonjour", channel="sms"))[0] == 200
    await h.settle()
    back = await h.user(PHONE)
    assert back is not None and back.delivery_blocked_at is None and back.delivery_blocked_reason is None
    assert back.delivery_failures == 0
    assert (await remind(h, back, "Rappel 2")).ok and "Rappel 2" in h.twilio.bodies()


async def test_failed_status_callbacks_stop_proactive_sends(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    h.twilio.callback_statuses = ("sent", "undelivered")
    h.twilio.callback_error_code = "63024"
    for n in range(3):
        accepted = await remind(h, user, f"Rappel {n}")
        assert accepted.ok  # Twilio accepted it; it fails later, in the callback
        await h.twilio.idle()
    refreshed = await h.user(PHONE)
    assert refreshed is not None and refreshed.delivery_failures == 3
    skipped = await remind(h, refreshed, "Rappel 3")
    assert skipped.skipped == "delivery_blocked"
    assert skipped.detail == "63024 whatsapp: not a WhatsApp user"
    blocked = await h.user(PHONE)
    assert blocked is not None and blocked.delivery_blocked_reason == skipped.detail
    assert blocked.delivery_blocked_at is not None
    assert h.twilio.bodies() == ["Rappel 0", "Rappel 1", "Rappel 2"]
    # A parent invitation or any send to that number by its number is held back too.
    by_number = await send_to_number(h.services, PHONE, text="Invitation", kind="parent_confirm")
    assert by_number.skipped == "delivery_blocked" and len(h.twilio.sent) == 3


async def test_passing_failures_do_not_block(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    h.twilio.callback_statuses = ("sent", "undelivered")
    h.twilio.callback_error_code = "30003"  # phone off or out of coverage: it may work tomorrow
    for n in range(4):
        assert (await remind(h, user, f"Rappel {n}")).ok
        await h.twilio.idle()
    assert (await remind(h, user, "Rappel 4")).ok
    refreshed = await h.user(PHONE)
    assert refreshed is not None and refreshed.delivery_blocked_at is None


async def test_a_delivered_message_breaks_the_streak(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, last_channel="sms")
    h.twilio.fail_next("21211", times=2)
    await remind(h, user, "Un")
    await remind(h, user, "Deux")
    assert (await remind(h, user, "Trois")).ok
    await h.twilio.idle()  # "delivered"
    h.twilio.fail_next("21211")
    await remind(h, user, "Quatre")
    refreshed = await h.user(PHONE)
    assert refreshed is not None and refreshed.delivery_blocked_at is None
    assert (await remind(h, refreshed, "Cinq")).ok


async def test_the_threshold_is_a_setting(make_harness: Any) -> None:
    h = await make_harness(DELIVERY_BLOCK_AFTER="1")
    user = await h.make_user(PHONE)
    h.twilio.fail_next("63024")
    await remind(h, user)
    refreshed = await h.user(PHONE)
    assert refreshed is not None
    assert refreshed.delivery_blocked_reason == "63024 whatsapp: not a WhatsApp user"


@pytest.mark.parametrize(("name", "value", "message"), [
    ("DELIVERY_BLOCK_AFTER", "0", "DELIVERY_BLOCK_AFTER must be 1 or more"),
    ("FILE_LINK_SMS_TTL_S", "0", "FILE_LINK_SMS_TTL_S must be more than 0"),
    ("FILE_LINK_SMS_TTL_S", "a week", "FILE_LINK_SMS_TTL_S"),
    ("TWILIO_TEMPLATE_LINK_VARIABLE", "1", "TWILIO_TEMPLATE_LINK_VARIABLE must be a template variable"),
    ("TWILIO_TEMPLATE_LINK_VARIABLE", "file link", "TWILIO_TEMPLATE_LINK_VARIABLE must be"),
])
def test_bad_outbound_settings_are_refused(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings({name: value})


def test_outbound_settings_defaults() -> None:
    settings = load_settings({})
    assert settings.file_link_sms_ttl_s == 604800 and settings.delivery_block_after == 3
    assert settings.twilio_template_link_variable == ""
