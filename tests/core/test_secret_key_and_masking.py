"""Phone numbers however they are written are masked in logs; `serve` and `worker` need the bot's
own SECRET_KEY, long and random, and start with no placeholder of an example but for a local trial
(ALLOW_PLACEHOLDERS=1, said at WARNING)."""

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
from bot.config import REQUIRED_FOR_SERVE, ConfigError, Environment, load_settings
from bot.config_secrets import MAKE_SECRET, refusal, secrets_of
from tests.support.processes import start_up_lines

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


KEY = "kq3HzV0m-Tn8yWc2rLbP5dJx9fGs4eA7uQ1iOoZ6"  # 40 random characters: a key serve accepts
# Required to serve, and not placeholders: a key of the bot's own is the only thing left to check.
SERVE_ENV = {"PUBLIC_BASE_URL": "https://bot.deblo.test", "TWILIO_ACCOUNT_SID": "AC" + "0" * 32,
             "TWILIO_AUTH_TOKEN": "twilio-token-of-the-account", "LLM_API_KEY": "sk-or-v1-0123456789"}


def _start(command: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m bot COMMAND` from an empty directory (no .env file brings a setting)."""
    full = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "DATA_DIR": str(tmp_path / "data"),
            "REDIS_URL": "redis://127.0.0.1:1/0", **SERVE_ENV, **env}
    return subprocess.run([sys.executable, "-m", "bot", command], cwd=tmp_path, env=full,
                          capture_output=True, text=True, timeout=60)


def test_secret_key_is_required_for_serve_and_never_the_twilio_token() -> None:
    with pytest.raises(ConfigError, match="missing required setting SECRET_KEY"):
        load_settings(SERVE_ENV, require=REQUIRED_FOR_SERVE)
    same = load_settings({**SERVE_ENV, "TWILIO_AUTH_TOKEN": KEY, "SECRET_KEY": KEY},
                         require=REQUIRED_FOR_SERVE)
    refused = refusal(same)
    assert refused is not None and "not the value of TWILIO_AUTH_TOKEN" in refused.reason
    own = load_settings({**SERVE_ENV, "SECRET_KEY": KEY}, require=REQUIRED_FOR_SERVE)
    assert own.secret_key == KEY and refusal(own) is None
    # Without one (the `chat` command), never the Twilio token: a random key of this process.
    first, second = load_settings(SERVE_ENV).secret_key, load_settings(SERVE_ENV).secret_key
    assert first not in (SERVE_ENV["TWILIO_AUTH_TOKEN"], "") and first != second and len(first) >= 32
    assert refusal(load_settings(SERVE_ENV)) is None


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_serve_and_worker_refuse_to_start_without_secret_key(command: str, tmp_path: Path) -> None:
    done = _start(command, tmp_path)
    assert done.returncode == 2
    assert "SECRET_KEY" in done.stderr and "missing required setting" in done.stderr


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_key_copied_from_a_tutorial_is_refused(command: str, tmp_path: Path) -> None:
    """The attack: SECRET_KEY=changeme signs every file link, job page and progress page, and
    whoever read the tutorial can forge a link to any child's files and progress."""
    done = _start(command, tmp_path, SECRET_KEY="changeme")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()  # one line: the variable, and how to make a key
    assert line.startswith("error: SECRET_KEY is a placeholder") and MAKE_SECRET in line
    assert not (tmp_path / "data").exists()  # refused before anything was made


@pytest.mark.parametrize(("key", "said"), [
    ("changeme", "placeholder"), ("change-me", "placeholder"), ("secret", "placeholder"),
    ("your-secret-key", "placeholder"), ("<your secret key>", "placeholder"),
    ("CHANGE_ME_" * 4, "placeholder"),
    ("s3cret-but-short", "16 characters long, at least 32"), ("", None), ("ab" * 20, "not random"),
    ("twilio-token-of-the-account", "TWILIO_AUTH_TOKEN"),
])
def test_every_weak_key_is_refused_whatever_allow_placeholders_says(key: str, said: str | None) -> None:
    for allow in ("0", "1"):
        settings = load_settings({**SERVE_ENV, "SECRET_KEY": key, "ALLOW_PLACEHOLDERS": allow})
        refused = refusal(settings)
        if said is None:  # unset (the `chat` command): a random key of this process
            assert refused is None
            continue
        assert refused is not None and said in refused.reason and refused.reason.startswith("SECRET_KEY")
        assert MAKE_SECRET in refused.line
    made = subprocess.run([sys.executable, "-c", MAKE_SECRET.split('"')[1]], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert refusal(load_settings({**SERVE_ENV, "SECRET_KEY": made})) is None  # what the line says to run


def test_every_key_token_and_password_is_a_secret() -> None:
    """What redact removes and placeholders are looked for in: every such variable, today's and the
    next one's (a Settings field declared without repr=False would fail here)."""
    names = [name.upper() for name, info in Environment.model_fields.items()
             if name.upper().endswith(("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")) and info.annotation is str]
    assert "SECRET_KEY" in names and "SMTP_PASSWORD" in names and "EMBEDDINGS_API_KEY" in names
    env = {name: f"value-of-{name.lower()}" for name in names}
    found = dict(secrets_of(load_settings(env)))
    assert all(found.get(name) == value for name, value in env.items()), found


def _env_example() -> dict[str, str]:
    lines = (ROOT / ".env.example").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


@pytest.mark.parametrize(("variable", "value"), [
    ("PUBLIC_BASE_URL", None),  # .env.example's own: https://bot.example.org
    ("TWILIO_AUTH_TOKEN", "your_auth_token"), ("TWILIO_ACCOUNT_SID", "ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"),
    ("LLM_API_KEY", "YOUR_API_KEY"), ("SMTP_PASSWORD", "changeme"), ("PAYMENT_SECRET", "<secret>"),
    ("LLM_BASE_URL", "https://llm.example.com/v1"),
])
def test_placeholders_of_examples_are_refused_unless_a_local_trial(variable: str, value: str | None) -> None:
    copied = {**_env_example(), **SERVE_ENV, "SECRET_KEY": KEY}
    if value is None:
        copied[variable] = _env_example()[variable]
    else:
        copied.update({variable: value, "PUBLIC_BASE_URL": "https://bot.deblo.test"})
    refused = refusal(load_settings(copied))
    assert refused is not None and refused.reason.startswith(f"{variable} holds a placeholder")
    assert "ALLOW_PLACEHOLDERS=1" in refused.fix
    assert refusal(load_settings({**copied, "ALLOW_PLACEHOLDERS": "1"})) is None


def test_allow_placeholders_serves_and_says_so_loudly(tmp_path: Path) -> None:
    env = {**SERVE_ENV, "SECRET_KEY": KEY, "PUBLIC_BASE_URL": "https://bot.example.org"}
    refused = _start("serve", tmp_path, **env)
    assert refused.returncode == 2 and "PUBLIC_BASE_URL holds a placeholder" in refused.stderr
    assert "ALLOW_PLACEHOLDERS=1" in refused.stderr
    trial = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "DATA_DIR": str(tmp_path / "data"),
             "HOST": "127.0.0.1", "PORT": "0", **env, "ALLOW_PLACEHOLDERS": "1"}
    seen = start_up_lines(trial, tmp_path)
    warned = [json.loads(line) for line in seen if "ALLOW_PLACEHOLDERS" in line]
    assert warned and warned[0]["level"] == "warning", seen
    assert "NOT FOR REAL USERS" in warned[0]["msg"] and "PUBLIC_BASE_URL" in warned[0]["msg"]
    assert any("serving" in line for line in seen), seen
