"""Photos the model sees: image parts scaled down, or the text Tesseract reads when it cannot see."""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import select

from bot import library
from bot.billing import credits
from bot.storage.models import CreditEntry, Message, TurnRecord, UserFile
from tests.fakes.llm import image_parts
from tests.support.harness import Harness
from tests.support.media import blank_photo, decode, french_page, large_photo, small_png

# One backend: the database only holds the message; the photo or voice does not depend on it.
pytestmark = pytest.mark.one_backend

PHONE = "+2250700000001"
MakeHarness = Callable[..., Awaitable[Harness]]


def _user_content(request: dict[str, Any]) -> Any:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


async def _entries(h: Harness, reason: str) -> list[CreditEntry]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(CreditEntry).where(CreditEntry.reason == reason))).all())


async def _turns(h: Harness) -> list[TurnRecord]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(TurnRecord).order_by(TurnRecord.id))).all())


async def test_photos_reach_the_model_as_scaled_image_parts_in_order(media_harness: MakeHarness) -> None:
    h = await media_harness(IMAGE_INPUT_CREDITS="2")
    user = await h.make_user(PHONE)
    photo = large_photo()
    assert len(photo) > 2_000_000  # a phone camera's photo, well over what is sent on
    h.llm.push_text("Je vois ton exercice : commençons par la première question.")
    media = [(photo, "image/jpeg"), (small_png(), "image/png")]
    await h.inbound(PHONE, "Aide-moi avec cet exercice", media=media)
    await h.settle()

    [request] = h.llm.requests
    assert request["model"] == "test/vision"  # LLM_VISION_MODEL for a turn that carries an image
    content = _user_content(request)
    assert content[0]["type"] == "text" and content[0]["text"].startswith("Aide-moi avec cet exercice")
    assert [p["type"] for p in content[1:]] == ["image_url", "image_url"]
    first, second = (decode(p["image_url"]["url"]) for p in content[1:])
    assert first.format == "JPEG" and first.size == (1568, 1176)  # long side 1,568 px, shape kept
    assert len(base64.b64decode(content[1]["image_url"]["url"].split(",", 1)[1])) <= 1_000_000
    assert second.size == (300, 200)  # a small photo is not enlarged; the PNG goes as JPEG
    assert await h.texts_to(PHONE) == ["Je vois ton exercice : commençons par la première question."]

    # History keeps a reference to the stored files, not their bytes.
    async with h.services.sessions() as db:
        saved = (await db.scalars(select(Message.content).where(Message.role == "user"))).all()
        files = (await db.scalars(select(UserFile).order_by(UserFile.id))).all()
    [content] = saved
    assert content is not None and "base64" not in content
    assert all(f"file id {f.id}" in content for f in files)
    # The next turn does not pay for the images again.
    await h.inbound(PHONE, "Et la suite ?")
    await h.settle()
    assert image_parts(h.llm.requests[-1]) == [] and "base64" not in json.dumps(h.llm.requests[-1])
    assert h.llm.requests[-1]["model"] == "test/model"

    [entry] = await _entries(h, "image_input")
    assert entry.user_id == user.id and entry.delta == -4  # two images at IMAGE_INPUT_CREDITS=2
    turn = (await _turns(h))[0]
    assert turn.detail is not None
    assert turn.detail["media"] == {"images": 2, "images_refused": False, "image_credits": 4}


async def test_read_user_file_shows_an_earlier_photo_to_a_vision_model(media_harness: MakeHarness) -> None:
    h = await media_harness()
    await h.make_user(PHONE)
    h.llm.push_text("Belle photo.")
    await h.inbound(PHONE, "", media=[(small_png(640, 480), "image/png")])
    await h.settle()
    async with h.services.sessions() as db:
        photo = await db.scalar(select(UserFile))
    assert photo is not None
    h.llm.push_tool_calls(("read_user_file", {"file_id": photo.id}))
    h.llm.push_text("Je la revois.")
    await h.inbound(PHONE, "Regarde encore ma photo d'hier")
    await h.settle()
    after_tool = h.llm.requests[-1]
    [part] = image_parts(after_tool)
    assert decode(part["image_url"]["url"]).size == (640, 480)
    tool_message = next(m for m in after_tool["messages"] if m["role"] == "tool")
    assert "base64" not in tool_message["content"]
    async with h.services.sessions() as db:
        stored = " ".join(c or "" for c in (await db.scalars(select(Message.content))).all())
    assert "base64" not in stored  # seen in that turn only


async def test_with_vision_off_tesseract_reads_the_french_text(media_harness: MakeHarness) -> None:
    h = await media_harness(LLM_VISION="off")
    await h.make_user(PHONE)
    h.llm.push_text("Calculons cette somme ensemble.")
    await h.inbound(PHONE, "", media=[(french_page(), "image/jpeg")])
    await h.settle()

    [request] = h.llm.requests
    assert image_parts(request) == []
    content = _user_content(request)
    assert isinstance(content, str) and "Texte lu sur la photo" in content and "OCR" in content
    for word in ("Exercice", "calcule", "somme", "fractions", "suivantes"):
        assert word in content, (word, content)
    assert await h.texts_to(PHONE) == ["Calculons cette somme ensemble."]
    # The same text feeds read_user_file and search_user_files.
    async with h.services.sessions() as db:
        photo = await db.scalar(select(UserFile))
        assert photo is not None and "fractions" in (photo.text or "")
        hits = await library.search_files(db, photo.user_id, "fractions")
    assert [hit.file_id for hit in hits] == [photo.id]
    assert await _entries(h, "image_input") == []  # no image went to the model


async def test_a_photo_without_readable_text_is_said_so(media_harness: MakeHarness) -> None:
    h = await media_harness(LLM_VISION="off")
    await h.make_user(PHONE)
    await h.inbound(PHONE, "", media=[(blank_photo(), "image/jpeg")])
    await h.settle()
    assert h.llm.requests == []
    [reply] = await h.texts_to(PHONE)
    assert "aucun texte" in reply and "taper l'exercice" in reply and "plus nette" in reply


async def test_a_provider_refusing_images_falls_back_to_ocr_in_the_same_turn(
    media_harness: MakeHarness,
) -> None:
    h = await media_harness()
    await h.make_user(PHONE)
    h.llm.refuse_images = True
    h.llm.push_text("D'après ta photo, il faut additionner les fractions.")
    await h.inbound(PHONE, "Tu peux m'aider ?", media=[(french_page(), "image/jpeg")])
    await h.settle()

    assert h.llm.refused_image_requests == 1
    refused, answered = h.llm.requests
    assert len(image_parts(refused)) == 1
    assert image_parts(answered) == []
    content = _user_content(answered)
    assert content.startswith("Tu peux m'aider ?") and "Texte lu sur la photo" in content
    assert "fractions" in content
    assert await h.texts_to(PHONE) == ["D'après ta photo, il faut additionner les fractions."]
    assert await _entries(h, "image_input") == []  # the refused image costs nothing
    [turn] = await _turns(h)
    assert turn.exit_reason == "answered" and turn.detail is not None
    assert turn.detail["media"]["images_refused"] is True


async def test_ten_photos_take_a_balance_of_one_no_lower_than_the_overdraft(
    media_harness: MakeHarness,
) -> None:
    h = await media_harness(IMAGE_INPUT_CREDITS="1", TURN_OVERDRAFT_CREDITS="5")
    user = await h.make_user(PHONE, credit_balance=1)
    h.llm.push_text("Je vois tes dix photos.")
    media = [(small_png(64 + i, 48), "image/png") for i in range(10)]
    await h.inbound(PHONE, "Corrige tout", media=media)
    await h.settle()

    assert len(image_parts(h.llm.requests[0])) == 10
    async with h.services.sessions() as db:
        assert await credits.balance(db, user.id) == -5  # not -10: the floor holds for images too
    [entry] = await _entries(h, "image_input")
    assert entry.ref is not None and entry.ref.startswith("image:") and entry.balance_after == -5
    [turn] = await _turns(h)
    assert turn.detail is not None
    assert turn.detail["media"]["image_credits"] == -entry.delta  # what was taken, not what was due


async def test_photos_count_into_the_day_at_tokens_per_credit(media_harness: MakeHarness) -> None:
    h = await media_harness(IMAGE_INPUT_CREDITS="2", TOKENS_PER_CREDIT="1000", USER_DAILY_TOKEN_LIMIT="24000")
    user = await h.make_user(PHONE, credit_balance=500)
    h.llm.push_text("Je vois tes photos.")
    await h.inbound(PHONE, "Corrige tout", media=[(small_png(64 + i, 48), "image/png") for i in range(10)])
    await h.settle()
    made = await h.user(PHONE)
    assert made is not None
    daily = credits.daily_tokens(h.services.state, h.settings, made, h.clock())
    assert daily is not None
    # 120 tokens of the model call, and 20 credits of photos at 1,000 tokens a credit.
    assert await daily.used() == 120 + 20_000

    # 3,880 tokens are left of the day: not enough for a turn, the photos spent it.
    await h.inbound(PHONE, "Et encore une chose")
    await h.settle()
    assert len(h.llm.requests) == 1
    assert "limite d'utilisation" in (await h.texts_to(PHONE))[-1]
    assert user.id == made.id
