"""Phone numbers however they are written are masked in logs; `serve` and `worker` need the bot's
own SECRET_KEY."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot import logs
from bot.config import REQUIRED_FOR_SERVE, ConfigError, load_settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("written", [
    "+2250700000001",
    "whatsapp:+2250700000001",
    "+225 07 00 00 00 01",
    "+225-07-00-00-00-01",
    "+225.07.00.00.00.01",
    "(225) 07 00 00 00 01",
    "(+225) 07 00 00 00 01",
    "+225\u202f07\u202f00\u202f00\u202f00\u202f01",  # the narrow spaces of French typography
    "+225\u00a007\u00a000\u00a000\u00a000\u00a001",
    "07 00 00 00 01",
    "+1 (415) 555-0100",
])
def test_numbers_with_separators_are_masked(written: str) -> None:
    masked = logs.mask(f"« {written} » a écrit")
    digits = "".join(ch for ch in masked if ch.isdigit())
    assert "*" in masked and masked.endswith(" » a écrit")
    # At most the country code and the last two digits are left.
    assert len(digits) <= 6 and "0000" not in digits


@contextmanager
def json_logger(name: str) -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A logger writing through the bot's JSON formatter into a string, for the test's length."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield logger, stream
    finally:
        logger.removeHandler(handler)


def test_masked_in_json_logs_too() -> None:
    with json_logger("test.masking") as (logger, stream):
        logger.info("rappel pour +225 07 00 00 00 01", extra={"to": "(225) 07-00-00-00-01"})
    entry = json.loads(stream.getvalue())
    assert "00 00" not in stream.getvalue() and "00-00" not in stream.getvalue()
    assert entry["msg"] == "rappel pour +2250*******01" and entry["to"] == "2250*******01"


def test_a_log_line_keeps_values_json_cannot_hold_as_is() -> None:
    """Keys that are not strings, an integer past 64 bits, a date, an object: the line is still
    written, one JSON object, with the number still masked inside."""
    at = datetime(2026, 12, 2, 8, 0, tzinfo=UTC)
    with json_logger("test.odd_values") as (logger, stream):
        logger.info("a", extra={"counts": {1: "+2250700000001"}, "at": at, "obj": Path("/x")})
        logger.info("b", extra={"big": 2**70})
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["counts"] == {"1": "+2250*******01"} and first["obj"] == "/x"
    assert datetime.fromisoformat(first["at"]) == at
    assert second["big"] == 2**70 and second["msg"] == "b"


@pytest.mark.parametrize("text", [
    "due 2026-12-01 09:00", "at 05:20:58", "port 8080, id 12345", "ip 127.0.0.1", "3 x 10 20",
    "quiz 4 of 10",
])
def test_other_numbers_are_left_alone(text: str) -> None:
    assert logs.mask(text) == text


def test_secret_key_is_required_for_serve_and_never_the_twilio_token() -> None:
    env = {"PUBLIC_BASE_URL": "https://bot.example", "TWILIO_ACCOUNT_SID": "AC1", "TWILIO_AUTH_TOKEN": "tok",
           "LLM_API_KEY": "k"}
    with pytest.raises(ConfigError, match="missing required setting SECRET_KEY"):
        load_settings(env, require=REQUIRED_FOR_SERVE)
    with pytest.raises(ConfigError, match="SECRET_KEY must be its own secret"):
        load_settings({**env, "SECRET_KEY": "tok"}, require=REQUIRED_FOR_SERVE)
    assert load_settings({**env, "SECRET_KEY": "s3cret"}, require=REQUIRED_FOR_SERVE).secret_key == "s3cret"
    # Without one (the `chat` command), never the Twilio token: a random key of this process.
    first, second = load_settings(env).secret_key, load_settings(env).secret_key
    assert first not in ("tok", "") and first != second and len(first) >= 32


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_serve_and_worker_refuse_to_start_without_secret_key(command: str, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "DATA_DIR": str(tmp_path / "data"),
           "PUBLIC_BASE_URL": "https://bot.example", "TWILIO_ACCOUNT_SID": "AC1", "TWILIO_AUTH_TOKEN": "tok",
           "LLM_API_KEY": "k", "REDIS_URL": "redis://127.0.0.1:1/0"}
    # Run from an empty directory, so that no .env file brings a key.
    done = subprocess.run([sys.executable, "-m", "bot", command], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "SECRET_KEY" in done.stderr and "missing required setting" in done.stderr
