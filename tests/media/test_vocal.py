"""VOCAL / VOICE: answers also come as an OGG/Opus voice note on WhatsApp; not offered on SMS."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.storage.models import CreditEntry, TurnRecord, User
from tests.fakes.speech import FakeSpeech
from tests.support.harness import Harness
from tests.support.media import SPEECH_KEY

# One backend: the database only holds the message; the photo or voice does not depend on it.
pytestmark = pytest.mark.one_backend

PHONE = "+2250700000001"
MakeHarness = Callable[..., Awaitable[Harness]]
ANSWER = "Une fraction, c'est une part d'un tout : un demi, c'est une part sur deux."


async def ffprobe(data: bytes) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "voice"
        path.write_bytes(data)
        proc = await asyncio.create_subprocess_exec(
            "ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", str(path),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return json.loads(out)


async def _say(h: Harness, body: str, channel: str = "whatsapp") -> list[str]:
    before = len(await h.texts_to(PHONE))
    await h.inbound(PHONE, body, channel=channel)
    await h.settle()
    return (await h.texts_to(PHONE))[before:]


async def test_vocal_sends_the_answer_with_an_ogg_opus_voice_note(
    media_harness: MakeHarness, speech: FakeSpeech
) -> None:
    h = await media_harness(TTS_VOICE="nova", SPEECH_CHARS_PER_CREDIT="50")
    user = await h.make_user(PHONE)
    [on] = await _say(h, "vocal")
    assert "note vocale" in on
    assert (await h.user(PHONE)).voice_replies is True  # type: ignore[union-attr]

    h.llm.push_text(ANSWER)
    sent_before = len(h.twilio.to(PHONE))
    await _say(h, "C'est quoi une fraction ?")
    messages = h.twilio.to(PHONE)[sent_before:]
    assert [m.get("Body", "") for m in messages] == [ANSWER, ""]
    media_url = messages[-1]["MediaUrl"]
    [fetched] = [f for f in h.twilio.fetched if f["url"] == media_url]
    assert fetched["content_type"] == "audio/ogg"  # WhatsApp plays OGG/Opus sent as audio/ogg as a voice note
    probe = await ffprobe(fetched["body"])
    assert probe["format"]["format_name"] == "ogg"
    assert [s["codec_name"] for s in probe["streams"]] == ["opus"]
    assert float(probe["format"]["duration"]) > 0.3

    [request] = speech.speech_requests
    assert request["model"] == "tts-1" and request["voice"] == "nova" and request["input"] == ANSWER
    assert speech.speech_headers[0]["Authorization"] == f"Bearer {SPEECH_KEY}"
    async with h.services.sessions() as db:
        [charge] = (await db.scalars(select(CreditEntry).where(CreditEntry.reason == "speech_output"))).all()
        turn = await db.scalar(select(TurnRecord))
    assert charge.user_id == user.id and charge.delta == -2  # 74 characters at 50 per credit
    assert turn is not None and turn.detail["media"]["speech_chars"] == len(ANSWER)

    [off] = await _say(h, "VOICE OFF")
    assert "seulement en texte" in off
    h.llm.push_text("Texte seul.")
    assert await _say(h, "Et un tiers ?") == ["Texte seul."]
    assert len(speech.speech_requests) == 1


async def test_when_speech_fails_the_text_still_goes(media_harness: MakeHarness, speech: FakeSpeech) -> None:
    h = await media_harness()
    await h.make_user(PHONE, voice_replies=True)
    speech.speech_failures.append(503)
    h.llm.push_text(ANSWER)
    sent_before = len(h.twilio.to(PHONE))
    await _say(h, "C'est quoi une fraction ?")
    messages = h.twilio.to(PHONE)[sent_before:]
    assert [m.get("Body") for m in messages] == [ANSWER] and "MediaUrl" not in messages[0]
    async with h.services.sessions() as db:
        charges = (await db.scalars(select(CreditEntry).where(CreditEntry.reason == "speech_output"))).all()
    assert charges == []


async def test_vocal_is_not_offered_on_sms(media_harness: MakeHarness, speech: FakeSpeech) -> None:
    h = await media_harness()
    await h.make_user(PHONE, last_channel="sms")
    [reply] = await _say(h, "VOCAL", channel="sms")
    assert "que sur WhatsApp" in reply
    assert (await h.user(PHONE)).voice_replies is False  # type: ignore[union-attr]
    assert speech.speech_requests == []


async def test_a_spoken_answer_takes_a_small_balance_no_lower_than_the_overdraft(
    media_harness: MakeHarness, speech: FakeSpeech
) -> None:
    h = await media_harness(SPEECH_CHARS_PER_CREDIT="1", TURN_OVERDRAFT_CREDITS="5")
    user = await h.make_user(PHONE, voice_replies=True, credit_balance=2)
    h.llm.push_text(ANSWER)
    await _say(h, "C'est quoi une fraction ?")
    assert len(speech.speech_requests) == 1
    async with h.services.sessions() as db:
        [charge] = (await db.scalars(select(CreditEntry).where(CreditEntry.reason == "speech_output"))).all()
        turn = await db.scalar(select(TurnRecord))
        balance = (await db.get(User, user.id)).credit_balance  # type: ignore[union-attr]
    # 74 characters due at one credit each, after the turn's tokens took one: the floor at -5.
    assert charge.ref is not None and charge.ref.startswith("speech:") and charge.delta == -6
    assert balance == charge.balance_after == -5
    assert turn is not None and turn.detail["media"]["speech_credits"] == 6
