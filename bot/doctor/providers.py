"""The paid providers, asked the cheapest question that proves the settings: Twilio's account and
numbers, one 1-token completion from the model's API, the speech APIs' model lists. A 401/403 is
named as a bad key, a 404 from the model's API as a wrong model."""

from __future__ import annotations

from typing import Any

import httpx

from bot.config import Settings
from bot.doctor.local import SANDBOX_WHATSAPP
from bot.doctor.probes import PROBE_TIMEOUT_S, _get, _why, twilio_base
from bot.doctor.report import Check, fail, off, ok

TWILIO_MESSAGING_API = "https://messaging.twilio.com"


async def twilio_account(http: httpx.AsyncClient, settings: Settings) -> Check:
    sid, token = settings.twilio_account_sid, settings.twilio_auth_token
    if not sid or not token:
        return fail("Twilio", "TWILIO_ACCOUNT_SID or TWILIO_AUTH_TOKEN is not set: nothing can be sent",
                    "copy both from the Twilio console")
    got = await _get(http, f"{twilio_base(settings)}/2010-04-01/Accounts/{sid}.json", auth=(sid, token))
    if isinstance(got, str):
        return fail("Twilio", got, "check TWILIO_API_BASE_URL and the network")
    if got.status_code in (401, 403):
        return fail("Twilio", f"credentials refused (HTTP {got.status_code}, error 20003)",
                    "check TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN")
    if got.status_code != 200:
        return fail("Twilio", f"HTTP {got.status_code}: {_why(got, settings)}", "check TWILIO_ACCOUNT_SID")
    status = str(got.json().get("status") or "")
    if status != "active":
        return fail("Twilio", f"the account is {status or 'not active'}",
                    "reactivate it in the Twilio console")
    return ok("Twilio", "the account answers to these credentials")


async def sms_number(http: httpx.AsyncClient, settings: Settings) -> Check:
    number = settings.twilio_sms_from
    if not number:
        return off("SMS number", "TWILIO_SMS_FROM is not set: WhatsApp only", "set TWILIO_SMS_FROM=+…")
    if number.startswith("MG"):
        return ok("SMS number", f"messaging service {number}")
    sid = settings.twilio_account_sid
    got = await _get(http, f"{twilio_base(settings)}/2010-04-01/Accounts/{sid}/IncomingPhoneNumbers.json",
                     params={"PhoneNumber": number}, auth=(sid, settings.twilio_auth_token))
    if isinstance(got, str) or got.status_code != 200:
        why = got if isinstance(got, str) else f"HTTP {got.status_code}"
        return fail("SMS number", f"cannot list the account's numbers: {why}", "see the Twilio line")
    if not got.json().get("incoming_phone_numbers"):
        return fail("SMS number", f"{number} is not a number of this account",
                    "set TWILIO_SMS_FROM to one of the account's numbers")
    return ok("SMS number", f"{number} belongs to the account")


async def whatsapp_sender(http: httpx.AsyncClient, settings: Settings) -> Check | None:
    """None for the sandbox or no sender: the settings check already said so."""
    number = settings.twilio_whatsapp_from.removeprefix("whatsapp:")
    if not number or number == SANDBOX_WHATSAPP:
        return None
    base = settings.twilio_api_base_url.rstrip("/") or TWILIO_MESSAGING_API
    got = await _get(http, f"{base}/v2/Channels/Senders", params={"Channel": "whatsapp"},
                     auth=(settings.twilio_account_sid, settings.twilio_auth_token))
    if isinstance(got, str) or got.status_code != 200:
        why = got if isinstance(got, str) else f"HTTP {got.status_code}"
        return fail("WhatsApp sender", f"cannot list the account's WhatsApp senders: {why}",
                    "see the Twilio line")
    listed = got.json().get("senders", [])
    senders = {str(s.get("sender_id") or ""): str(s.get("status") or "") for s in listed}
    status = senders.get(f"whatsapp:{number}")
    if status is None:
        return fail("WhatsApp sender", f"{number} is not a WhatsApp sender of this account",
                    "register it (Messaging → Senders) or fix TWILIO_WHATSAPP_FROM")
    if status.upper() != "ONLINE":
        return fail("WhatsApp sender", f"{number} is {status}",
                    "finish its registration in the Twilio console")
    return ok("WhatsApp sender", f"{number} is online")


def _llm_finding(response: httpx.Response, settings: Settings) -> Check:
    why = _why(response, settings)
    if response.status_code == 200:
        return ok("model API", f"{settings.llm_model} answers at {settings.llm_base_url}")
    if response.status_code in (401, 403):
        return fail("model API", f"key refused (HTTP {response.status_code}): {why}", "check LLM_API_KEY")
    if response.status_code == 404 or (response.status_code == 400 and "model" in why.lower()):
        return fail("model API", f"model {settings.llm_model} unknown (HTTP {response.status_code}): {why}",
                    "check LLM_MODEL (and LLM_BASE_URL)")
    return fail("model API", f"HTTP {response.status_code}: {why}", "check LLM_BASE_URL")


async def model_api(http: httpx.AsyncClient, settings: Settings, timeout_s: float = PROBE_TIMEOUT_S) -> Check:
    headers = {"Authorization": f"Bearer {settings.llm_api_key}"} if settings.llm_api_key else {}
    body: dict[str, Any] = {"model": settings.llm_model, "max_tokens": 1, "stream": False,
                            "messages": [{"role": "user", "content": "ping"}]}
    try:
        response = await http.post(settings.llm_base_url.rstrip("/") + "/chat/completions", json=body,
                                   headers=headers, timeout=timeout_s)
    except httpx.TimeoutException:
        return fail("model API", f"no answer in {timeout_s:g} s", "check LLM_BASE_URL and the network")
    except httpx.HTTPError as exc:
        return fail("model API", f"cannot connect: {type(exc).__name__}", "check LLM_BASE_URL")
    return _llm_finding(response, settings)


async def speech_api(http: httpx.AsyncClient, name: str, base: str, key: str, variable: str) -> Check:
    if not base:
        return off(name, f"{variable.replace('API_KEY', 'BASE_URL')} is not set",
                   f"set {variable.replace('API_KEY', 'BASE_URL')} and {variable}")
    got = await _get(http, base.rstrip("/") + "/models", headers={"Authorization": f"Bearer {key}"})
    if isinstance(got, str):
        return fail(name, got, f"check {variable.replace('API_KEY', 'BASE_URL')}")
    if got.status_code in (401, 403):
        return fail(name, f"key refused (HTTP {got.status_code})", f"check {variable}")
    return ok(name, f"{base} answers")
