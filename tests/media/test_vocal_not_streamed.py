"""With VOCAL on, a long WhatsApp answer is not sent paragraph by paragraph: it goes whole, with
its one voice note, once the model has finished."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.channel import formatting
from tests.fakes.speech import FakeSpeech
from tests.support.harness import Harness

# One backend: the database only holds the message; the photo or voice does not depend on it.
pytestmark = pytest.mark.one_backend

PHONE = "+2250700000321"
SENTENCE = "Une fraction partage un tout en parts égales, et le dénominateur dit combien de parts. "
ANSWER = "\n\n".join(SENTENCE * 4 for _ in range(3))


async def test_vocal_answers_are_not_streamed(media_harness: Callable[..., Awaitable[Harness]],
                                              speech: FakeSpeech) -> None:
    h = await media_harness()
    await h.make_user(PHONE, voice_replies=True)
    h.llm.push_text(ANSWER, chunk_delay_s=0.005)
    await h.inbound(PHONE, "C'est quoi une fraction ?")
    await h.settle()
    messages: list[dict[str, Any]] = h.twilio.to(PHONE)
    assert [m.get("Body", "") for m in messages] == [formatting.to_whatsapp(ANSWER), ""]
    assert "MediaUrl" in messages[-1] and len(speech.speech_requests) == 1
    [stream] = h.llm.streams
    first = min(t for t, kind, _ in h.twilio.events if kind == "created")
    assert stream["ended"] is not None and first > stream["ended"]
