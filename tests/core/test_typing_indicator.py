"""WhatsApp's typing indicator: sent once a message is taken up by the agent turn, for that message,
before the reply, never on SMS, and never holding the reply back (a failure or a slow answer from
Twilio's beta changes nothing for the reply)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp
import pytest

from tests.support.harness import new_sid

PHONE = "+2250700000301"

# Twilio's indicator API, whatever the database: run once.


def created_at(h: Any, n: int = 0) -> float:
    """The monotonic time the fake Twilio created the n-th message."""
    return [t for t, kind, _ in h.twilio.events if kind == "created"][n]


async def test_a_whatsapp_turn_shows_typing_for_its_message_before_the_reply(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE)
    h.llm.push_text("Une fraction partage un tout en parts égales.")
    sid = new_sid("SM")
    assert (await h.inbound(PHONE, "C'est quoi une fraction ?", sid=sid))[0] == 200
    await h.settle()
    assert await h.texts_to(PHONE) == ["Une fraction partage un tout en parts égales."]
    [typing] = h.twilio.typing
    assert typing["channel"] == "whatsapp" and typing["messageId"] == sid
    assert h.twilio.typing_requests == 1 and h.twilio.unauthorised == 0
    assert typing["at"] < created_at(h)


async def test_sms_gets_no_typing_indicator(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE, last_channel="sms")
    h.llm.push_text("Une fraction partage un tout.")
    await h.inbound(PHONE, "C'est quoi une fraction ?", channel="sms")
    await h.settle()
    assert await h.texts_to(PHONE) == ["Une fraction partage un tout."]
    assert h.twilio.typing_requests == 0


async def test_commands_answered_without_the_model_show_no_typing(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE)
    await h.inbound(PHONE, "MENU")
    await h.settle()
    assert await h.texts_to(PHONE) and h.llm.requests == []
    assert h.twilio.typing_requests == 0


async def test_a_failing_indicator_does_not_stop_the_reply(harness: Any,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    h = harness
    await h.make_user(PHONE)
    h.llm.push_text("Voici la réponse malgré tout.")
    h.twilio.fail_typing("500")
    with caplog.at_level(logging.INFO, logger="bot.twilio"):
        await h.inbound(PHONE, "Bonjour")
        await h.settle()
    assert await h.texts_to(PHONE) == ["Voici la réponse malgré tout."]
    assert h.twilio.typing_requests == 1 and h.twilio.typing == []
    refused = [r for r in caplog.records if r.getMessage() == "typing indicator refused"]
    assert refused and refused[0].levelno == logging.INFO


async def test_a_slow_indicator_does_not_delay_the_reply(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE)
    h.llm.push_text("Réponse rapide.")
    # The indicator's call takes longer than the whole turn: the reply must not wait for it.
    h.twilio.typing_delay_s = 4.0
    await h.inbound(PHONE, "Bonjour")
    await h.twilio.wait_for(1)
    assert h.twilio.typing == []  # the reply went out while the indicator's call was still open
    loop = asyncio.get_running_loop()
    until = loop.time() + 30
    while not h.twilio.typing:  # the indicator ends in its own time
        assert loop.time() < until, "the indicator's call never completed"
        await asyncio.sleep(0.05)
    assert h.twilio.typing[0]["at"] > created_at(h)
    await h.settle()


async def test_the_indicator_call_and_the_fake_speak_twilio_s_api(harness: Any) -> None:
    h = harness
    assert await h.services.twilio.show_typing(new_sid("MM")) is True
    assert await h.services.twilio.show_typing("not-a-sid") is False
    url = h.twilio.url + "/v2/Indicators/Typing.json"
    auth = aiohttp.BasicAuth(h.twilio.account_sid, h.twilio.auth_token)
    async with aiohttp.ClientSession() as session:
        async with session.post(url, data={"channel": "whatsapp"}, auth=auth) as resp:
            assert resp.status == 400 and "messageId" in (await resp.json())["message"]
        async with session.post(url, data={"channel": "sms", "messageId": new_sid()}, auth=auth) as resp:
            assert resp.status == 400
        wrong = aiohttp.BasicAuth(h.twilio.account_sid, "wrong")
        async with session.post(url, data={"channel": "whatsapp", "messageId": new_sid()},
                                auth=wrong) as resp:
            assert resp.status == 401
    assert len(h.twilio.typing) == 1 and h.twilio.typing_requests == 5
