"""Paystack (cards and mobile money, XOF among its currencies), on its REST API.

- POST {base}/transaction/initialize with `Authorization: Bearer <secret key>` and
  {email, amount (in the currency's subunit: ×100), currency, reference, callback_url, metadata}
  returns {"status": true, "data": {"authorization_url", "access_code", "reference"}}.
- Webhooks carry `x-paystack-signature`: the hex HMAC-SHA512 of the raw body keyed with the secret
  key; the event we act on is `charge.success`.
- GET {base}/transaction/verify/{reference} returns the transaction with its `status` ("success"),
  `amount` and `currency`: the payment is credited only when this agrees.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from bot import credentials
from bot.billing.payments.provider import (
    BadSignature,
    Checkout,
    PaymentError,
    Provider,
    WebhookEvent,
    json_object,
)
from bot.config import Settings
from bot.services import Services
from bot.storage.models import Payment, User

DEFAULT_BASE_URL = "https://api.paystack.co"
SUBUNIT = 100


def _base(settings: Settings) -> str:
    return settings.payment_base_url or DEFAULT_BASE_URL


def _headers(settings: Settings) -> dict[str, str]:
    return {"Authorization": f"Bearer {settings.payment_secret}", "Content-Type": "application/json"}


def signature(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha512).hexdigest()


def customer_email(settings: Settings, user: User) -> str:
    # Paystack requires an e-mail; users reach us by phone, so one is derived when none is confirmed.
    if user.email and user.email_verified:
        return user.email
    host = urlsplit(settings.public_base_url).hostname or "deblo.ai"
    if host in ("localhost", "127.0.0.1") or "." not in host:
        host = "deblo.ai"
    return f"user{user.id}@{host}"


async def _call(
    services: Services, method: str, path: str, json: dict[str, Any] | None = None
) -> dict[str, Any]:
    settings = services.settings
    try:
        response = await services.http.request(
            method,
            f"{_base(settings)}{path}",
            json=json,
            headers=_headers(settings),
            timeout=settings.payment_timeout_s,
        )
    except httpx.TimeoutException:
        raise PaymentError("Paystack did not answer in time") from None
    except httpx.HTTPError as exc:
        raise PaymentError(f"Paystack is unreachable ({type(exc).__name__})") from None
    try:
        data = response.json()
    except ValueError:
        raise PaymentError(f"Paystack answered {response.status_code} without JSON") from None
    if response.status_code in (401, 403):
        credentials.refused("Paystack", "PAYMENT_SECRET", f"HTTP {response.status_code}")
    if response.status_code >= 400 or not isinstance(data, dict) or not data.get("status"):
        message = data.get("message") if isinstance(data, dict) else None
        raise PaymentError(f"Paystack refused ({response.status_code}): {message or 'no message'}")
    return data


async def start(services: Services, payment: Payment, user: User) -> Checkout:
    body = {
        "email": customer_email(services.settings, user),
        "amount": str(payment.amount * SUBUNIT),
        "currency": payment.currency,
        "reference": payment.reference,
        "callback_url": f"{services.settings.public_base_url}/payments/done",
        "metadata": {"user_id": user.id, "pack": payment.pack, "credits": payment.credits},
    }
    data = (await _call(services, "POST", "/transaction/initialize", body)).get("data") or {}
    url = data.get("authorization_url")
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        raise PaymentError("Paystack gave no authorization_url")
    return Checkout(url=url, provider_ref=data.get("access_code"))


def parse_webhook(settings: Settings, headers: Mapping[str, str], body: bytes) -> WebhookEvent | None:
    given = headers.get("x-paystack-signature") or headers.get("X-Paystack-Signature") or ""
    if not given or not hmac.compare_digest(given.strip().lower(), signature(settings.payment_secret, body)):
        raise BadSignature()
    event = json_object(body)
    if event.get("event") != "charge.success":
        return None
    data = event.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("reference"), str):
        raise ValueError("charge.success without data.reference")
    amount = data.get("amount")
    status = str(data.get("status") or "")
    return WebhookEvent(
        reference=data["reference"],
        paid=status == "success",
        amount=int(amount) // SUBUNIT if isinstance(amount, int | str) and str(amount).isdigit() else None,
        currency=data.get("currency"),
        status=status,
    )


async def confirm(services: Services, payment: Payment) -> bool:
    data = (await _call(services, "GET", f"/transaction/verify/{quote(payment.reference, safe='')}")).get(
        "data"
    )
    if not isinstance(data, dict):
        return False
    return (
        data.get("status") == "success"
        and str(data.get("amount")) == str(payment.amount * SUBUNIT)
        and data.get("currency") == payment.currency
        and data.get("reference") == payment.reference
    )


PROVIDER = Provider(name="paystack", start=start, parse_webhook=parse_webhook, confirm=confirm)
