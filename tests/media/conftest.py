"""A harness whose transcription and speech APIs are the local stand-ins of tests/fakes/speech.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from tests.fakes.speech import FakeSpeech
from tests.support.harness import Harness
from tests.support.media import SPEECH_KEY


@pytest.fixture
async def speech() -> AsyncIterator[FakeSpeech]:
    fake = FakeSpeech()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()


@pytest.fixture
async def media_harness(
    make_harness: Callable[..., Awaitable[Harness]], speech: FakeSpeech
) -> Callable[..., Awaitable[Harness]]:
    async def make(**env: Any) -> Harness:
        values = {"TRANSCRIBE_BASE_URL": speech.url, "TRANSCRIBE_API_KEY": SPEECH_KEY,
                  "TTS_BASE_URL": speech.url, "TTS_API_KEY": SPEECH_KEY, "LLM_VISION_MODEL": "test/vision"}
        values.update(env)
        return await make_harness(**values)

    return make
