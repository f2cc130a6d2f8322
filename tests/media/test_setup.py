"""Settings for photos and voice notes, checked; start-up says what is missing and what is not offered."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from bot.agent import vision
from bot.config import ConfigError, load_settings
from bot.media import speech


def test_defaults_follow_the_llm() -> None:
    key = "llm-key-0123456789"
    s = load_settings({"LLM_BASE_URL": "https://llm.example/v1", "LLM_API_KEY": key, "LLM_MODEL": "m"})
    assert s.llm_vision is True and s.llm_vision_model == "m"
    assert (s.transcribe_base_url, s.transcribe_api_key) == ("https://llm.example/v1", key)
    assert s.transcribe_model == "whisper-1" and s.transcribe_max_seconds == 180
    assert (s.tts_base_url, s.tts_api_key, s.tts_model) == ("https://llm.example/v1", key, "tts-1")
    assert key not in repr(s)


def test_own_services_and_vision_off() -> None:
    s = load_settings({"LLM_VISION": "off", "LLM_VISION_MODEL": "v", "TRANSCRIBE_API_KEY": "s",
                       "TRANSCRIBE_BASE_URL": "https://stt.example", "TTS_BASE_URL": "https://tts.example/",
                       "TTS_VOICE": "nova"})
    assert s.llm_vision is False and s.llm_vision_model == "v"
    assert (s.transcribe_base_url, s.transcribe_api_key) == ("https://stt.example", "s")
    assert (s.tts_base_url, s.tts_voice) == ("https://tts.example", "nova")


@pytest.mark.parametrize(("name", "value"), [
    ("LLM_VISION", "maybe"), ("TRANSCRIBE_MAX_SECONDS", "0"), ("TRANSCRIBE_MAX_SECONDS", "long"),
    ("TRANSCRIBE_BASE_URL", "stt.example"), ("TTS_BASE_URL", "ftp://tts"), ("AUDIO_SECONDS_PER_CREDIT", "0"),
    ("SPEECH_CHARS_PER_CREDIT", "-1"), ("IMAGE_INPUT_CREDITS", "-1"),
])
def test_a_bad_value_is_named(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        load_settings({name: value})


def test_start_up_says_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       caplog: pytest.LogCaptureFixture) -> None:
    settings = load_settings({})
    caplog.set_level(logging.INFO, logger="bot.media.speech")
    assert speech.log_availability(settings) == []  # everything is installed here
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    caplog.clear()
    monkeypatch.setenv("PATH", str(tmp_path))  # a machine without tesseract nor ffmpeg
    vision.ocr_languages.cache_clear()
    try:
        problems = speech.log_availability(settings)
    finally:
        monkeypatch.setenv("PATH", os.environ["PATH"])
        vision.ocr_languages.cache_clear()
    assert any("tesseract" in p for p in problems) and any("ffmpeg" in p for p in problems)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "photos are not read as text" in text and "tesseract-ocr-fra" in text
    assert "voice notes are not transcribed and VOCAL spoken replies are not offered" in text
