"""`python -m bot doctor` and what an operator must see: each dependency OK / OFF / FAIL with the
variable to fix, against stand-ins that answer 200, 401, 404 or not at all; placeholders copied
from .env.example flagged; no secret printed, even when a provider echoes it; credentials a provider
refuses logged once a minute and counted."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import socket
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from bot import credentials, doctor
from bot.config import ConfigError, load_settings
from bot.config_secrets import redact
from bot.doctor import Status, local, providers
from bot.storage.migrate import upgrade
from tests.fakes.llm import FakeLLM
from tests.fakes.twilio import FakeTwilio
from tests.support.outreach import smtp_server  # noqa: F401  (a fixture)
from tests.support.ports import free_port
from tests.support.processes import started_fakes  # noqa: F401  (a fixture)

ROOT = Path(__file__).resolve().parents[2]
SMS = "+2250700000099"
WHATSAPP = "+2250700000098"


@pytest.fixture
def stand_ins(started_fakes: tuple[FakeTwilio, FakeLLM]) -> tuple[FakeTwilio, FakeLLM]:  # noqa: F811
    twilio, _llm = started_fakes
    twilio.phone_numbers.add(SMS)
    twilio.whatsapp_senders[f"whatsapp:{WHATSAPP}"] = "ONLINE"
    return started_fakes


def _env(twilio: FakeTwilio, llm: FakeLLM, **extra: str) -> dict[str, str]:
    return {"TWILIO_ACCOUNT_SID": twilio.account_sid, "TWILIO_AUTH_TOKEN": twilio.auth_token,
            "TWILIO_API_BASE_URL": twilio.url, "TWILIO_SMS_FROM": SMS,
            "TWILIO_WHATSAPP_FROM": f"whatsapp:{WHATSAPP}", "LLM_BASE_URL": llm.url, "LLM_API_KEY": "k",
            "SECRET_KEY": "kq3HzV0m-Tn8yWc2rLbP5dJx9fGs4eA7uQ1iOoZ6", "ORG_NAME": "Lycée Sainte-Marie",
            **extra}


def _by_name(checks: list[Any]) -> dict[str, Any]:
    return {c.name: c for c in checks}


def test_placeholders_from_env_example_are_flagged(tmp_path: Path) -> None:
    settings = load_settings({"DATA_DIR": str(tmp_path), "PUBLIC_BASE_URL": "https://bot.example.org",
                              "TWILIO_WHATSAPP_FROM": "whatsapp:+14155238886"})
    found = _by_name(local.local_checks(settings, "missing required setting TWILIO_ACCOUNT_SID"))
    assert found["public URL"].status is Status.FAIL and "placeholder" in found["public URL"].reason
    assert "PUBLIC_BASE_URL" in found["public URL"].fix
    assert found["WhatsApp sender"].status is Status.FAIL and "sandbox" in found["WhatsApp sender"].reason
    assert found["settings"].status is Status.FAIL and "TWILIO_ACCOUNT_SID" in found["settings"].reason
    # What is merely not configured is OFF and says what it costs, not FAIL.
    assert found["e-mail"].status is Status.OFF and "SMTP_HOST" in found["e-mail"].reason
    assert found["payments"].status is Status.OFF and found["web search"].status is Status.OFF
    unreachable = load_settings({"DATA_DIR": str(tmp_path), "PUBLIC_BASE_URL": "http://localhost:8080"})
    assert local.public_url(unreachable).status is Status.FAIL
    real = load_settings({"DATA_DIR": str(tmp_path), "PUBLIC_BASE_URL": "https://bot.deblo.ci"})
    assert local.public_url(real).status is Status.OK


PRODUCTION = {"PUBLIC_BASE_URL": "https://bot.deblo.ci", "TWILIO_WHATSAPP_FROM": f"whatsapp:{WHATSAPP}"}


def test_org_name_fails_without_it_everywhere_and_no_training_in_production_only(tmp_path: Path) -> None:
    bare = _by_name(local.local_checks(load_settings({"DATA_DIR": str(tmp_path), **PRODUCTION})))
    assert bare["organisation"].status is Status.FAIL and "ORG_NAME" in bare["organisation"].fix
    assert bare["no training"].status is Status.FAIL
    assert "train AI models" in bare["no training"].reason
    assert "LLM_PROVIDER_NO_TRAINING=1" in bare["no training"].fix
    # A local trial, a plain-http address or an example domain is not production: the attestation
    # is only a WARN there, but a service named after no school FAILs wherever it runs.
    for url in ("http://localhost:8080", "https://127.0.0.1:8443", "http://bot.deblo.ci",
                "https://bot.example.org"):
        settings = load_settings({"DATA_DIR": str(tmp_path), "PUBLIC_BASE_URL": url})
        trial = _by_name(local.local_checks(settings))
        assert trial["organisation"].status is Status.FAIL, url
        assert "ORG_NAME" in trial["organisation"].reason and doctor.failed([trial["organisation"]])
        assert trial["no training"].status is Status.WARN, url
    named = _by_name(local.local_checks(load_settings({
        "DATA_DIR": str(tmp_path), **PRODUCTION, "ORG_NAME": " Lycée Sainte-Marie ",
        "LLM_PROVIDER_NO_TRAINING": "1"})))
    assert named["organisation"].status is Status.OK and named["organisation"].reason == "Lycée Sainte-Marie"
    assert named["no training"].status is Status.OK
    for blank in ("   ", ""):
        settings = load_settings({"DATA_DIR": str(tmp_path), "PUBLIC_BASE_URL": "http://localhost:8080",
                                  "ORG_NAME": blank})
        assert _by_name(local.local_checks(settings))["organisation"].status is Status.FAIL


def test_a_shared_sender_for_both_personas_is_warned_of(tmp_path: Path) -> None:
    def senders(**env: str) -> Any:
        settings = load_settings({"DATA_DIR": str(tmp_path), **PRODUCTION, **env})
        return _by_name(local.local_checks(settings)).get("persona senders")

    unset, same = senders(), senders(TWILIO_WHATSAPP_FROM_PRO=f"whatsapp:{WHATSAPP}")
    assert unset.status is Status.WARN and "is not set" in unset.reason
    assert same.status is Status.WARN and "is the students' number" in same.reason
    assert "TWILIO_WHATSAPP_FROM_PRO" in same.fix
    apart = senders(TWILIO_WHATSAPP_FROM_PRO="whatsapp:+2250700000097")
    assert apart.status is Status.OK and "+2250700000097" in apart.reason
    assert senders(TWILIO_WHATSAPP_FROM="") is None  # SMS only: no sender to share
    with pytest.raises(ConfigError, match="whatsapp:"):
        load_settings({"DATA_DIR": str(tmp_path), "TWILIO_WHATSAPP_FROM_PRO": "+2250700000097"})
    # A warning is not a failure: doctor's exit code stays 0 for it.
    assert not doctor.failed([unset]) and "WARN" in doctor.table([unset])
    # The line doctor prints for one sender shared by both personas.
    assert doctor.table([same]).splitlines()[0] == (
        "persona senders  WARN  TWILIO_WHATSAPP_FROM_PRO is the students' number: the students' tutor and "
        "the pro assistant share one WhatsApp sender, which reads as a general-purpose assistant")


async def test_the_model_api_named_by_what_it_answers(stand_ins: tuple[FakeTwilio, FakeLLM],
                                                       tmp_path: Path) -> None:
    twilio, llm = stand_ins
    settings = load_settings({"DATA_DIR": str(tmp_path), **_env(twilio, llm)})
    async with httpx.AsyncClient() as http:
        assert (await providers.model_api(http, settings)).status is Status.OK
        llm.push_status(401, '{"error": {"message": "Invalid API key"}}')
        bad_key = await providers.model_api(http, settings)
        llm.push_status(404, '{"error": {"message": "The model does not exist"}}')
        bad_model = await providers.model_api(http, settings)
        llm.push_hang(5)
        silent = await providers.model_api(http, settings, timeout_s=0.3)
    assert bad_key.status is Status.FAIL and "LLM_API_KEY" in bad_key.fix and "401" in bad_key.reason
    assert bad_model.status is Status.FAIL and "LLM_MODEL" in bad_model.fix
    assert silent.status is Status.FAIL and "no answer" in silent.reason
    assert llm.requests[0]["max_tokens"] == 1  # the cheapest question


async def test_twilio_account_numbers_and_sender(stand_ins: tuple[FakeTwilio, FakeLLM],
                                                  tmp_path: Path) -> None:
    twilio, llm = stand_ins
    here = {"DATA_DIR": str(tmp_path)}
    settings = load_settings({**here, **_env(twilio, llm)})
    wrong = load_settings({**here, **_env(twilio, llm, TWILIO_AUTH_TOKEN="old")})
    unknown = load_settings({**here, **_env(twilio, llm, TWILIO_SMS_FROM="+2250700000001")})
    async with httpx.AsyncClient() as http:
        assert (await providers.twilio_account(http, settings)).status is Status.OK
        assert (await providers.sms_number(http, settings)).status is Status.OK
        sender = await providers.whatsapp_sender(http, settings)
        refused = await providers.twilio_account(http, wrong)
        not_ours = await providers.sms_number(http, unknown)
        twilio.whatsapp_senders[f"whatsapp:{WHATSAPP}"] = "OFFLINE"
        offline = await providers.whatsapp_sender(http, settings)
    assert sender is not None and sender.status is Status.OK
    assert refused.status is Status.FAIL and "20003" in refused.reason and "TWILIO_AUTH_TOKEN" in refused.fix
    assert not_ours.status is Status.FAIL and "not a number of this account" in not_ours.reason
    assert offline is not None and offline.status is Status.FAIL and "OFFLINE" in offline.reason


async def _healthz_on_lan() -> tuple[web.AppRunner, str]:
    """A /healthz that answers on this machine's own network address (not loopback)."""
    app = web.Application()
    async def healthz(_request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app.router.add_get("/healthz", healthz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "0.0.0.0", port).start()
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
    address = probe.getsockname()[0]
    probe.close()
    assert not address.startswith("127."), "the machine needs a non-loopback address for this test"
    return runner, f"http://{address}:{port}"


async def _doctor(env: dict[str, str]) -> tuple[int, str]:
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("TEST_")}, **env,
            "PYTHONPATH": str(ROOT)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "doctor", env=full, cwd=str(ROOT),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode() + err.decode()


async def test_doctor_exit_code_is_zero_only_without_a_fail(stand_ins: tuple[FakeTwilio, FakeLLM],
                                                            smtp_server: Any,  # noqa: F811
                                                            tmp_path: Path) -> None:
    twilio, llm = stand_ins
    runner, public = await _healthz_on_lan()
    mail = smtp_server()
    database = f"sqlite+aiosqlite:///{tmp_path / 'deblo.db'}"
    env = {**_env(twilio, llm), **mail.env(), "DATA_DIR": str(tmp_path), "DATABASE_URL": database,
           "PUBLIC_BASE_URL": public, "REDIS_URL": ""}
    try:
        code, out = await _doctor(env)
        assert code == 1 and "migrations at none" in out and "python -m bot db upgrade" in out
        await upgrade(database)
        code, out = await _doctor(env)
        assert code == 0, out
        lines = {line.split()[0]: line for line in out.splitlines() if line and not line.startswith(" ")}
        assert "OK" in lines["Twilio"] and "OK" in lines["database"] and "OFF" in lines["Redis"]
        assert "answers EHLO" in out and "/healthz answers from here" in out
        llm.push_status(401, '{"error": {"message": "Invalid API key"}}')
        code, out = await _doctor(env)
        assert code == 1 and "fix: check LLM_API_KEY" in out
    finally:
        await runner.cleanup()


async def test_no_secret_printed_when_the_provider_echoes_the_key(
        stand_ins: tuple[FakeTwilio, FakeLLM], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The attack: a provider that quotes the key it refused (as OpenAI's 401 does) had doctor print
    LLM_API_KEY, and URL settings' passwords were printed with their URLs."""
    twilio, llm = stand_ins
    llm.refuse_key_quoting_it = True
    key, url_password, search_password = "sk-echoed-7f3a9c2e5b1d", "url-pass-4e8d1c", "searx-pass-9b2f7a"
    env = {**_env(twilio, llm), "DATA_DIR": str(tmp_path), "LLM_API_KEY": key,
           "TRANSCRIBE_BASE_URL": llm.url.replace("http://", f"http://doctor:{url_password}@"),
           "SEARXNG_URL": f"https://search:{search_password}@searx.deblo.test",
           "DATABASE_URL": f"postgresql+asyncpg://deblo:{url_password}@127.0.0.1:1/deblo"}
    code, out = await _doctor(env)
    assert code == 1 and llm.requests, out  # the model's API was asked, and refused the key
    assert "key refused (HTTP 401): Incorrect API key provided: [LLM_API_KEY]" in out
    assert "SearXNG at https://***@searx.deblo.test" in out
    assert f"transcription         OK    http://***@127.0.0.1:{llm.url.rsplit(':', 1)[1]} answers" in out
    assert key not in out and url_password not in out and search_password not in out
    # The same URL's password as an HTTP client sends it (Basic), when a provider echoes that.
    basic = base64.b64encode(f"doctor:{url_password}".encode()).decode()
    assert redact(f"Incorrect API key provided: Basic {basic}", load_settings(env)).endswith(
        "Basic [TRANSCRIBE_BASE_URL password]")
    # What serve and worker log at start-up goes through the same function.
    caplog.set_level(logging.INFO, logger="bot.doctor")
    doctor.log_summary(load_settings(env))
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "SearXNG at https://***@" in logged and search_password not in logged


async def test_refused_credentials_logged_once_a_minute_and_counted(
        stand_ins: tuple[FakeTwilio, FakeLLM], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from bot.agent.llm import LLMClient, LLMError

    _twilio, llm = stand_ins
    settings = load_settings({"DATA_DIR": str(tmp_path), "LLM_BASE_URL": llm.url, "LLM_API_KEY": "old",
                              "LLM_MAX_RETRIES": "0"})
    before = credentials.REFUSED.labels("the model's API")._value.get()
    credentials._last_logged.clear()
    client = LLMClient(settings)
    caplog.set_level(logging.ERROR, logger="bot.credentials")
    try:
        for _ in range(3):
            llm.push_status(401, '{"error": {"message": "Invalid API key"}}')
            with pytest.raises(LLMError):
                await client.chat([{"role": "user", "content": "bonjour"}])
    finally:
        await client.close()
    errors = [r for r in caplog.records if r.name == "bot.credentials"]
    assert len(errors) == 1 and "LLM_API_KEY" in errors[0].getMessage()
    assert credentials.REFUSED.labels("the model's API")._value.get() - before == 3
    # A minute later the operator is told again.
    assert credentials.refused("the model's API", "LLM_API_KEY", "HTTP 401",
                               now=lambda: errors[0].created + 3600)


async def test_a_refusal_that_quotes_the_key_logs_no_key(
        stand_ins: tuple[FakeTwilio, FakeLLM], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Providers echo the refused key (« Incorrect API key provided: sk-… »): the log line keeps the
    provider's words and the first characters only."""
    from bot.agent.llm import LLMClient, LLMError

    _twilio, llm = stand_ins
    key = "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12"
    settings = load_settings({"DATA_DIR": str(tmp_path), "LLM_BASE_URL": llm.url, "LLM_API_KEY": key,
                              "LLM_MAX_RETRIES": "0"})
    credentials._last_logged.clear()
    client = LLMClient(settings)
    caplog.set_level(logging.ERROR, logger="bot.credentials")
    try:
        llm.push_status(401, f'{{"error": {{"message": "Incorrect API key provided: {key}"}}}}')
        with pytest.raises(LLMError):
            await client.chat([{"role": "user", "content": "bonjour"}])
    finally:
        await client.close()
    [logged] = [r.getMessage() for r in caplog.records if r.name == "bot.credentials"]
    assert "Incorrect API key provided: sk-p…" in logged and key not in logged and key[4:] not in logged
    assert credentials._masked("https://user:hunter2pass@api.example/v1 HTTP 401") == \
        "https://***@api.example/v1 HTTP 401"


def test_distress_heard_without_a_moderation_endpoint_is_warned_of(tmp_path: Path) -> None:
    def distress(**env: str) -> Any:
        settings = load_settings({"DATA_DIR": str(tmp_path), **PRODUCTION, **env})
        return _by_name(local.local_checks(settings))["distress"]

    default = distress()
    assert default.status is Status.WARN and "MODERATION_BASE_URL is not set" in default.reason
    assert "the phrase list and the message's meaning" in default.reason
    assert "MODERATION_BASE_URL" in default.fix
    assert "the phrase list alone" in distress(SAFETY_MEANING="false").reason
    with_endpoint = distress(MODERATION_BASE_URL="https://moderation.example.org/v1")
    assert with_endpoint.status is Status.OK and "moderation.example.org" in with_endpoint.reason
