"""The one shape every payment provider has (Paystack, the local stand-in), and their shared errors."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.billing.errors import BillingError
from bot.config import Settings
from bot.services import Services
from bot.storage.models import Payment, User


class PaymentError(BillingError):
    """The provider is down, slow or refused the request; the message is safe to log."""


class BadSignature(BillingError):
    """A webhook whose signature does not match: it did not come from the provider."""


@dataclass(frozen=True)
class Checkout:
    url: str
    provider_ref: str | None = None


@dataclass(frozen=True)
class WebhookEvent:
    reference: str
    paid: bool
    amount: int | None  # in whole units, as in Payment.amount
    currency: str | None
    status: str


@dataclass(frozen=True)
class Provider:
    name: str
    # Creates the payment at the provider and returns the link the user opens.
    start: Callable[[Services, Payment, User], Awaitable[Checkout]]
    # Checks the signature (raises BadSignature) and reads the event; None for events we ignore.
    parse_webhook: Callable[[Settings, Mapping[str, str], bytes], WebhookEvent | None]
    # Asks the provider whether the payment really is paid (raises PaymentError when unreachable).
    confirm: Callable[[Services, Payment], Awaitable[bool]]


def json_object(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"body is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError("body is not a JSON object")
    return data
