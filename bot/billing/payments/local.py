"""A local provider for development and tests: no money moves, the webhook shape is ours.

The link points at PAYMENT_BASE_URL (or the bot's own address) `/pay/<reference>`; a payment is
completed by POSTing {"reference", "status": "paid", "amount", "currency"} to the webhook with
`x-deblo-signature`, the hex HMAC-SHA256 of the raw body keyed with PAYMENT_SECRET.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from bot.billing.payments.provider import BadSignature, Checkout, Provider, WebhookEvent, json_object
from bot.config import Settings
from bot.services import Services
from bot.storage.models import Payment, User


def signature(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


async def start(services: Services, payment: Payment, user: User) -> Checkout:
    base = services.settings.payment_base_url or services.settings.public_base_url
    return Checkout(url=f"{base}/pay/{payment.reference}")


def parse_webhook(settings: Settings, headers: Mapping[str, str], body: bytes) -> WebhookEvent | None:
    given = headers.get("x-deblo-signature") or headers.get("X-Deblo-Signature") or ""
    if not given or not hmac.compare_digest(given.strip().lower(), signature(settings.payment_secret, body)):
        raise BadSignature()
    event = json_object(body)
    reference = event.get("reference")
    if not isinstance(reference, str):
        raise ValueError("no reference")
    amount = event.get("amount")
    status = str(event.get("status") or "")
    return WebhookEvent(
        reference=reference,
        paid=status == "paid",
        amount=amount if isinstance(amount, int) else None,
        currency=event.get("currency"),
        status=status,
    )


async def confirm(services: Services, payment: Payment) -> bool:
    return True  # the signed webhook is the whole truth here


PROVIDER = Provider(name="local", start=start, parse_webhook=parse_webhook, confirm=confirm)
