"""Voice notes heard: the transcript is the message's text for every handler; failures are told."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from sqlalchemy import select

from bot import library
from bot.billing import credits
from bot.storage.models import CreditEntry, InboundMessage, Message, User, UserFile
from tests.fakes.speech import FakeSpeech, sine_audio
from tests.support.harness import Harness
from tests.support.media import SPEECH_KEY

# One backend: the database only holds the message; the photo or voice does not depend on it.
pytestmark = pytest.mark.one_backend

PHONE = "+2250700000001"
MakeHarness = Callable[..., Awaitable[Harness]]
MCQ_ARGS = {
    "question": "Combien font 3 × 5 ?",
    "options": ["12", "15", "18", "20"],
    "correct_index": 1,
    "explanation": "3 fois 5 font quinze.",
    "subject": "Maths",
    "topic": "multiplication",
}


async def _say(h: Harness, body: str = "", media: list[tuple[bytes, str]] | None = None) -> list[str]:
    before = len(await h.texts_to(PHONE))
    status, _ = await h.inbound(PHONE, body, media=media or [])
    assert status == 200
    await h.settle()
    return (await h.texts_to(PHONE))[before:]


async def _entries(h: Harness, reason: str) -> list[CreditEntry]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(CreditEntry).where(CreditEntry.reason == reason))).all())


async def test_a_spoken_answer_answers_the_pending_quiz(
    media_harness: MakeHarness, speech: FakeSpeech
) -> None:
    h = await media_harness()
    user = await h.make_user(PHONE)
    h.llm.push_text("Bonjour ! On révise quoi ?")
    await _say(h, "Bonjour")
    h.llm.push_tool_calls(("interactive_quiz", MCQ_ARGS))
    h.llm.push_text("À toi de jouer !")
    await _say(h, "Fais-moi un quiz")
    calls = len(h.llm.requests)

    note = await sine_audio(2.0, "ogg")  # a real OGG/Opus voice note, as WhatsApp records them
    speech.push_transcript("Deux.")
    [verdict] = await _say(h, media=[(note, "audio/ogg")])

    assert verdict.startswith("🎤 « Deux. »\n\n")
    assert "Bravo, bonne réponse" in verdict  # « deux » chose option 2, the right one
    assert len(h.llm.requests) == calls  # the quiz handler took it, no model call
    [sent] = speech.transcriptions
    assert sent.fields["model"] == "whisper-1" and sent.fields["language"] == "fr"
    assert sent.filename == "voice.ogg" and sent.content_type == "audio/ogg" and sent.data == note
    assert sent.headers["Authorization"] == f"Bearer {SPEECH_KEY}"
    [charge] = await _entries(h, "audio_input")
    assert charge.user_id == user.id and charge.delta == -1  # 2 s at 60 s per credit
    async with h.services.sessions() as db:
        stored = await db.scalar(select(UserFile).where(UserFile.mime == "audio/ogg"))
        assert stored is not None and stored.text == "Deux."  # the note stays, findable by its words


async def test_a_spoken_stop_opts_out(media_harness: MakeHarness, speech: FakeSpeech) -> None:
    h = await media_harness()
    await h.make_user(PHONE)
    speech.push_transcript("Stop !")
    [reply] = await _say(h, media=[(await sine_audio(1.0, "ogg"), "audio/ogg")])
    assert reply.startswith("🎤 « Stop ! »") and "tu ne recevras plus aucun message" in reply
    user = await h.user(PHONE)
    assert user is not None and user.opted_out is True
    assert h.llm.requests == []


async def test_a_question_spoken_goes_to_the_model_and_the_reply_opens_with_it(
    media_harness: MakeHarness, speech: FakeSpeech
) -> None:
    h = await media_harness(LANGUAGE="fr")
    await h.make_user(PHONE)
    speech.push_transcript("Aide-moi avec les fractions s'il te plaît, je ne comprends pas du tout le cours")
    h.llm.push_text("Bien sûr ! Une fraction, c'est une part d'un tout.")
    [reply] = await _say(h, media=[(await sine_audio(3.0, "ogg"), "audio/ogg")])
    assert reply == ("🎤 « Aide-moi avec les fractions s'il te plaît, je ne comprends… »\n\n"
                     "Bien sûr ! Une fraction, c'est une part d'un tout.")
    user_messages = [m for m in h.llm.requests[0]["messages"] if m["role"] == "user"]
    assert user_messages[-1]["content"].startswith("Aide-moi avec les fractions s'il te plaît")
    assert "file id" not in user_messages[-1]["content"]  # heard, not handed over as a file to read


async def test_a_failed_transcription_tells_the_user_and_keeps_the_file(
    media_harness: MakeHarness, speech: FakeSpeech
) -> None:
    h = await media_harness()
    user = await h.make_user(PHONE)
    speech.push_transcription_error(500)
    [reply] = await _say(h, media=[(await sine_audio(1.5, "ogg"), "audio/ogg")])
    assert reply == ("Je n'ai pas pu écouter cette note vocale pour le moment. Merci d'écrire la question, "
                     "ou de la renvoyer dans un instant. Je la garde dans les fichiers.")
    assert h.llm.requests == []
    async with h.services.sessions() as db:
        files = await library.list_files(db, user.id)
        row = await db.scalar(select(InboundMessage))
    assert [f.mime for f in files] == ["audio/ogg"]  # nothing is lost
    assert row is not None and row.status == "done"
    assert await _entries(h, "audio_input") == []


async def test_an_unreadable_or_too_long_note_is_told(media_harness: MakeHarness, speech: FakeSpeech) -> None:
    h = await media_harness(TRANSCRIBE_MAX_SECONDS="2")
    await h.make_user(PHONE)
    [too_long] = await _say(h, media=[(await sine_audio(4.0, "ogg"), "audio/ogg")])
    assert "trop longue" in too_long and "plus de 2 secondes" in too_long
    [unreadable] = await _say(h, media=[(b"OggS not really audio", "audio/ogg")])
    assert "pas réussi à comprendre" in unreadable
    speech.push_transcript("   ")
    [silent] = await _say(h, media=[(await sine_audio(1.0, "ogg"), "audio/ogg")])
    assert "pas réussi à comprendre" in silent
    assert len(speech.transcriptions) == 1  # the long and the broken notes were never sent out


async def test_a_format_the_api_refuses_is_converted_with_ffmpeg(
    media_harness: MakeHarness, speech: FakeSpeech
) -> None:
    h = await media_harness()
    await h.make_user(PHONE, language="en")
    speech.push_transcript("What is a fraction?")
    h.llm.push_text("A fraction is a part of a whole.")
    aac = await sine_audio(1.0, "adts")  # AAC, as some older phones record
    [reply] = await _say(h, media=[(aac, "audio/aac")])
    assert reply.startswith("🎤 « What is a fraction? »")
    [sent] = speech.transcriptions
    assert sent.filename == "voice.ogg" and sent.data.startswith(b"OggS") and sent.fields["language"] == "en"


async def test_a_guest_is_heard_without_a_charge(media_harness: MakeHarness, speech: FakeSpeech) -> None:
    h = await media_harness()
    speech.push_transcript("Bonjour")
    replies = await _say(h, media=[(await sine_audio(1.0, "ogg"), "audio/ogg")])
    assert replies and replies[0].startswith("🎤 « Bonjour »")
    async with h.services.sessions() as db:
        user = await db.scalar(select(User).where(User.phone == PHONE))
        said = (await db.scalars(select(Message.content).where(Message.role == "user"))).all()
    assert user is not None and user.mode == "guest"
    assert await _entries(h, "audio_input") == []
    assert all("Bonjour" in (c or "") for c in said)


async def test_after_stop_an_unheard_note_gets_no_answer_and_a_spoken_start_comes_back(
    media_harness: MakeHarness, speech: FakeSpeech
) -> None:
    h = await media_harness()
    await h.make_user(PHONE, opted_out=True)
    speech.push_transcription_error(500)
    assert await _say(h, media=[(await sine_audio(1.0, "ogg"), "audio/ogg")]) == []
    speech.push_transcript("Start.")
    [back] = await _say(h, media=[(await sine_audio(1.0, "ogg"), "audio/ogg")])
    assert back.startswith("🎤 « Start. »") and "tu recevras de nouveau mes messages" in back
    user = await h.user(PHONE)
    assert user is not None and user.opted_out is False


async def test_a_long_note_takes_a_small_balance_no_lower_than_the_overdraft(
    media_harness: MakeHarness, speech: FakeSpeech
) -> None:
    h = await media_harness(AUDIO_SECONDS_PER_CREDIT="1", TURN_OVERDRAFT_CREDITS="5",
                            TOKENS_PER_CREDIT="1000", USER_DAILY_TOKEN_LIMIT="100000")
    user = await h.make_user(PHONE, credit_balance=2)
    speech.push_transcript("Explique-moi toute la leçon sur les fractions")
    await _say(h, media=[(await sine_audio(20.0, "ogg"), "audio/ogg")])

    [charge] = await _entries(h, "audio_input")
    async with h.services.sessions() as db:
        inbound_id = await db.scalar(select(InboundMessage.id))
    assert charge.ref == f"audio:{inbound_id}:0"
    assert charge.delta == -7 and charge.balance_after == -5  # 20 or 21 credits due, the floor at -5
    async with h.services.sessions() as db:
        assert (await db.get(User, user.id)).credit_balance == -5  # type: ignore[union-attr]
    daily = credits.daily_tokens(h.services.state, h.settings, user, h.clock())
    assert daily is not None and await daily.used() >= 20_000  # the credits heard count into the day
    assert h.llm.requests == []  # the balance is spent: no turn
