"""Checks that ask a service: the database and its migrations, Redis, Twilio, the model's API,
transcription and speech, SMTP, and whether the public URL answers from here. Each is bounded by
PROBE_TIMEOUT_S and turns every failure into a FAIL that names the variable to fix. What a provider
says goes through `said` (bot.config_secrets.redact, then cut short): a provider that echoes the
key it was given, or a driver that quotes its URL, prints no secret."""

from __future__ import annotations

import asyncio
from typing import Any

import aiosmtplib
import httpx
import redis.asyncio as aioredis
from sqlalchemy import text

from bot.config import TWILIO_DEFAULT_API, Settings
from bot.config_secrets import redact
from bot.doctor.report import Check, fail, off, ok
from bot.storage.db import make_engine
from bot.storage.migrate import UPGRADE, current_revision, head_revision

PROBE_TIMEOUT_S = 8.0


def said(text: str, settings: Settings, limit: int = 160) -> str:
    """A provider's or a driver's words without the secrets, then cut short (cut first, a secret
    cut in two would no longer be found)."""
    return redact(text, settings)[:limit]


def _failure(exc: Exception, settings: Settings, limit: int = 160) -> str:
    return f"{type(exc).__name__}: {said(str(exc), settings, limit)}"


async def database(settings: Settings) -> Check:
    engine = make_engine(settings.database_url)
    try:
        async with asyncio.timeout(PROBE_TIMEOUT_S):
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
            current = await current_revision(engine)
    except Exception as exc:  # any driver error is the same finding: the database does not answer
        return fail("database", f"cannot connect: {_failure(exc, settings)}",
                    "check DATABASE_URL and that the server runs")
    finally:
        await engine.dispose()
    head = head_revision()
    if current != head:
        return fail("database", f"migrations at {current or 'none'}, the code needs {head}", UPGRADE)
    return ok("database", f"answers, migrations at {head}")


async def redis_state(settings: Settings) -> Check:
    if not settings.redis_url:
        return off("Redis", "REDIS_URL is not set: one process, state in memory",
                   "set REDIS_URL to run several serve/worker processes")
    client = aioredis.Redis.from_url(settings.redis_url, socket_timeout=PROBE_TIMEOUT_S,
                                     socket_connect_timeout=PROBE_TIMEOUT_S)
    try:
        await client.ping()
    except Exception as exc:  # redis-py raises its own and OS errors alike
        return fail("Redis", f"no answer: {_failure(exc, settings)}",
                    "check REDIS_URL and that Redis runs")
    finally:
        await client.aclose()
    return ok("Redis", "answers")


def _why(response: httpx.Response, settings: Settings) -> str:
    """What a provider's error says, in its own words (its `error.message` when it is JSON)."""
    try:
        body: Any = response.json()
    except ValueError:
        return said(response.text, settings)
    if isinstance(body, dict):
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else body.get("message") or error
        return said(str(message or body), settings)
    return said(str(body), settings)


async def _get(http: httpx.AsyncClient, url: str, **kwargs: Any) -> httpx.Response | str:
    """The response, or why there is none."""
    try:
        return await http.get(url, timeout=PROBE_TIMEOUT_S, **kwargs)
    except httpx.TimeoutException:
        return f"no answer in {PROBE_TIMEOUT_S:g} s"
    except httpx.HTTPError as exc:
        return f"cannot connect: {type(exc).__name__}"


async def smtp(settings: Settings) -> Check:
    client = aiosmtplib.SMTP(hostname=settings.smtp_host, port=settings.smtp_port,
                             use_tls=settings.smtp_security == "tls", timeout=PROBE_TIMEOUT_S,
                             start_tls=False)
    try:
        async with asyncio.timeout(PROBE_TIMEOUT_S):
            await client.connect()
            await client.ehlo()
    except Exception as exc:  # connection, TLS and protocol errors all mean: no mail goes
        where = f"SMTP {settings.smtp_host}:{settings.smtp_port}"
        return fail("e-mail", f"{where}: {_failure(exc, settings, 120)}",
                    "check SMTP_HOST, SMTP_PORT and SMTP_SECURITY")
    finally:
        client.close()
    return ok("e-mail", f"SMTP {settings.smtp_host}:{settings.smtp_port} answers EHLO")


async def public_reachable(http: httpx.AsyncClient, settings: Settings) -> Check:
    got = await _get(http, settings.public_base_url.rstrip("/") + "/healthz")
    if isinstance(got, str):
        return fail("public URL reachable", f"{settings.public_base_url}/healthz: {got}",
                    "start `serve` and make PUBLIC_BASE_URL reach it (Twilio must)")
    if got.status_code != 200:
        return fail("public URL reachable", f"/healthz answered {got.status_code}: another service is there?",
                    "point PUBLIC_BASE_URL at this bot")
    return ok("public URL reachable", "/healthz answers from here")


def twilio_base(settings: Settings) -> str:
    return (settings.twilio_api_base_url or TWILIO_DEFAULT_API).rstrip("/")
