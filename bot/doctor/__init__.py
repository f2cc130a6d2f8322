"""`python -m bot doctor`: one line per dependency, OK / OFF / WARN / FAIL with the reason and the fix.

Exit code 0 only when nothing FAILs. `serve` and `worker` log the local part of the same table at
start-up (settings, tools, disk): start-up asks no paid provider, so a restart costs nothing and
never waits on one; `doctor` asks them all. `/readyz` stays as it is (database and state only).
Every line is printed or logged through bot.config_secrets.redact: no key, token or password, and
no URL's userinfo, reaches the operator's screen or the log."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import httpx

from bot.config import Settings
from bot.config_secrets import redact
from bot.doctor import local, probes, providers
from bot.doctor.report import Check, Status, failed, table

__all__ = ["Check", "Status", "failed", "log_summary", "run_checks", "table"]

log = logging.getLogger("bot.doctor")


async def _remote(settings: Settings) -> list[Check]:
    async with httpx.AsyncClient(follow_redirects=False) as http:
        account = await providers.twilio_account(http, settings)
        numbers: list[Check | None] = [None, None]
        if account.status is Status.OK:
            numbers = list(await asyncio.gather(providers.sms_number(http, settings),
                                                providers.whatsapp_sender(http, settings)))
        rest = await asyncio.gather(
            probes.database(settings), probes.redis_state(settings),
            providers.model_api(http, settings),
            providers.speech_api(http, "transcription", settings.transcribe_base_url,
                                 settings.transcribe_api_key, "TRANSCRIBE_API_KEY"),
            providers.speech_api(http, "speech", settings.tts_base_url, settings.tts_api_key, "TTS_API_KEY"),
            *([probes.smtp(settings)] if local.email(settings) is None else []),
            probes.public_reachable(http, settings),
        )
    return [account, *(c for c in numbers if c is not None), *rest]


async def run_checks(settings: Settings, missing: str | None = None) -> list[Check]:
    """Every check, the settings first (`missing`: what is said of unset required variables);
    providers asked concurrently."""
    return _redacted(local.local_checks(settings, missing) + await _remote(settings), settings)


def _redacted(checks: list[Check], settings: Settings) -> list[Check]:
    """The checks as they may be shown: a reason may quote a URL setting (PUBLIC_BASE_URL, the
    model's) or a settings error its value."""
    return [dataclasses.replace(c, reason=redact(c.reason, settings), fix=redact(c.fix, settings))
            for c in checks]


def log_summary(settings: Settings) -> None:
    """At start-up: the local checks, a FAIL at WARNING, the rest at INFO."""
    checks = _redacted(local.local_checks(settings), settings)
    for check in checks:
        level = logging.WARNING if check.status in (Status.FAIL, Status.WARN) else logging.INFO
        log.log(level, "%s %s: %s%s", check.status.value, check.name, check.reason,
                f" (fix: {check.fix})" if check.fix else "",
                extra={"check": check.name, "status": check.status.value})
    log.info("providers are not asked at start-up: python -m bot doctor asks them")
