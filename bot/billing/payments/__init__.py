"""Buying credits: the packs, the payment providers behind one shape, and crediting a paid payment.

A purchase is a `Payment` row (pending) with our own reference, sent to the provider, which returns a
link the user opens to pay. The provider then calls our webhook; a valid signature, a matching amount
and the provider's own confirmation mark the payment paid and credit the ledger with
`credits.apply(..., reason="purchase", ref=<reference>)` in the same transaction — idempotent on the
reference, so a webhook delivered any number of times credits once and tells the user once.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import select, update

from bot.billing import credits
from bot.billing.payments.provider import BadSignature, Checkout, PaymentError, Provider
from bot.channel.buttons import Menu
from bot.config import Settings
from bot.services import Services
from bot.storage.db import rowcount
from bot.storage.models import Payment, User
from bot.texts import fr_en

__all__ = [
    "MENU_TTL_S", "BadSignature", "Checkout", "Pack", "PaymentError", "Provider", "WebhookOutcome",
    "handle_webhook", "menu_text", "new_reference", "pack_label", "packs", "payment_link_text", "price_text",
    "provider_for", "show_menu", "start_purchase", "unavailable_reason",
]

log = logging.getLogger(__name__)

MENU_TTL_S = 30 * 60


@dataclass(frozen=True)
class Pack:
    number: int  # as shown in the menu, from 1
    credits: int
    price: int  # in whole units of the currency (XOF has no minor unit)
    currency: str

    @property
    def code(self) -> str:
        return f"{self.credits}c-{self.price}"


def packs(settings: Settings) -> list[Pack]:
    return [
        Pack(number=i, credits=c, price=p, currency=settings.payment_currency)
        for i, (c, p) in enumerate(settings.credit_packs, 1)
    ]


def provider_for(settings: Settings) -> Provider | None:
    from bot.billing.payments import local, paystack

    return {"paystack": paystack.PROVIDER, "local": local.PROVIDER}.get(settings.payment_provider)


def unavailable_reason(settings: Settings) -> str | None:
    if not settings.payment_provider:
        return "PAYMENT_PROVIDER is not set"
    if provider_for(settings) is None:
        return f"unknown PAYMENT_PROVIDER {settings.payment_provider!r} (paystack or local)"
    if not settings.payment_secret:
        return "PAYMENT_SECRET is not set"
    if not settings.credit_packs:
        return "no CREDIT_PACKS"
    return None


def price_text(pack: Pack) -> str:
    unit = "FCFA" if pack.currency in ("XOF", "XAF") else pack.currency
    return f"{pack.price:,} {unit}".replace(",", " ")


def menu_text(settings: Settings, language: str) -> str:
    if language == "en":
        lines = ["💳 Buy credits — reply with a number:"]
        lines += [f"{p.number}. {p.credits} credits — {price_text(p)}" for p in packs(settings)]
    else:
        lines = ["💳 Acheter des crédits — réponse par un numéro :"]
        lines += [f"{p.number}. {p.credits} crédits — {price_text(p)}" for p in packs(settings)]
    return "\n".join(lines)


def pack_label(pack: Pack, language: str) -> str:
    """A pack on a button or a list item: « 100 crédits — 500 FCFA »."""
    word = fr_en(language, "crédits", "credits")
    return f"{pack.credits} {word} — {price_text(pack)}"


async def show_menu(services: Services, conversation_id: int, language: str) -> Menu:
    """Makes the packs the pending numbered menu of the conversation; returns it (its body the
    numbered text, its options the packs, for buttons or a list on WhatsApp)."""
    from bot.channel.menus import set_menu

    offered = packs(services.settings)
    data = {"packs": [[p.credits, p.price] for p in offered]}
    menu_id = await set_menu(services, conversation_id, "credits", data, MENU_TTL_S)
    return Menu(menu_id=menu_id, body=menu_text(services.settings, language),
                options=tuple(pack_label(p, language) for p in offered), language=language)


def new_reference(user_id: int) -> str:
    # Paystack allows letters, digits, '-', '.' and '='.
    return f"deblo-{user_id}-{secrets.token_hex(8)}"


async def start_purchase(services: Services, user_id: int, pack: Pack) -> tuple[Payment, Checkout]:
    """Records a pending payment and asks the provider for its link (PaymentError when it cannot)."""
    provider = provider_for(services.settings)
    reason = unavailable_reason(services.settings)
    if provider is None or reason:
        raise PaymentError(reason or "no payment provider")
    async with services.sessions() as db:
        user = await db.get(User, user_id)
        if user is None:
            raise LookupError(f"no user {user_id}")
        payment = Payment(
            user_id=user_id,
            provider=provider.name,
            reference=new_reference(user_id),
            pack=pack.code,
            amount=pack.price,
            currency=pack.currency,
            credits=pack.credits,
            status="pending",
            created_at=services.clock(),
        )
        db.add(payment)
        await db.commit()
    try:
        checkout = await provider.start(services, payment, user)
    except PaymentError:
        await _set_status(services, payment.reference, "failed")
        raise
    return payment, checkout


async def _set_status(services: Services, reference: str, status: str) -> None:
    async with services.sessions() as db:
        await db.execute(
            update(Payment)
            .where(Payment.reference == reference, Payment.status == "pending")
            .values(status=status)
        )
        await db.commit()


@dataclass(frozen=True)
class WebhookOutcome:
    http_status: int
    detail: str
    credited: int = 0


async def handle_webhook(
    services: Services, provider_name: str, headers: Mapping[str, str], body: bytes
) -> WebhookOutcome:
    """Everything a delivery of the provider's webhook does; the HTTP layer only maps the outcome."""
    provider = provider_for(services.settings)
    if provider is None or provider.name != provider_name or not services.settings.payment_secret:
        return WebhookOutcome(404, "unknown payment provider")
    try:
        event = provider.parse_webhook(services.settings, headers, body)
    except BadSignature:
        log.warning("payment webhook with a bad signature refused (%s)", provider_name)
        return WebhookOutcome(401, "bad signature")
    except ValueError as exc:
        return WebhookOutcome(400, f"malformed event: {exc}")
    if event is None:
        return WebhookOutcome(200, "ignored")
    async with services.sessions() as db:
        payment = await db.scalar(select(Payment).where(Payment.reference == event.reference))
    if payment is None or payment.provider != provider.name:
        log.warning("payment webhook for unknown reference %s", event.reference)
        return WebhookOutcome(200, "unknown reference")
    if payment.status == "paid":
        return WebhookOutcome(200, "already credited")
    if not event.paid:
        await _set_status(services, payment.reference, "failed")
        return WebhookOutcome(200, f"not paid ({event.status})")
    if event.amount is not None and (
        event.amount != payment.amount or (event.currency or "") != payment.currency
    ):
        log.error(
            "payment %s: paid %s %s, expected %s %s",
            payment.reference,
            event.amount,
            event.currency,
            payment.amount,
            payment.currency,
        )
        return WebhookOutcome(200, "amount mismatch: not credited")
    try:
        confirmed = await provider.confirm(services, payment)
    except PaymentError as exc:
        # Not acknowledged: the provider retries the webhook later.
        log.warning("payment %s could not be confirmed yet: %s", payment.reference, exc)
        return WebhookOutcome(503, "confirmation unavailable, retry later")
    if not confirmed:
        return WebhookOutcome(200, "not confirmed by the provider: not credited")
    return await _credit(services, payment)


async def _credit(services: Services, payment: Payment) -> WebhookOutcome:
    now = services.clock()
    async with services.sessions() as db:
        claimed = await db.execute(
            update(Payment)
            .where(Payment.id == payment.id, Payment.status != "paid")
            .values(status="paid", paid_at=now)
        )
        balance = None
        if rowcount(claimed) == 1:
            balance = await credits.apply(
                db, payment.user_id, payment.credits, "purchase", ref=payment.reference
            )
        await db.commit()
    if balance is None:
        return WebhookOutcome(200, "already credited")
    log.info("payment %s: +%s credits to user %s", payment.reference, payment.credits, payment.user_id)
    await _tell_user(services, payment, balance)
    return WebhookOutcome(200, "credited", credited=payment.credits)


async def _tell_user(services: Services, payment: Payment, balance: int) -> None:
    from bot.channel.outbound import send_to_user  # late: the message path's module

    async with services.sessions() as db:
        user = await db.get(User, payment.user_id)
    if user is None:
        return
    if user.language == "en":
        text = f"✅ Payment received: +{payment.credits} credits. Your balance: {balance} credits. Thank you!"
    else:
        text = f"✅ Paiement reçu : +{payment.credits} crédits. Solde : {balance} crédits. Merci !"
    try:
        await send_to_user(services, user, text=text, kind="payment")
    except Exception:
        log.exception("could not tell user %s about payment %s", user.id, payment.reference)


def payment_link_text(pack: Pack, checkout: Checkout, language: str) -> str:
    if language == "en":
        return (
            f"🔗 To buy {pack.credits} credits ({price_text(pack)}), pay here:\n{checkout.url}\n"
            "Your credits are added as soon as the payment is confirmed."
        )
    return (
        f"🔗 Pour acheter {pack.credits} crédits ({price_text(pack)}), paiement ici :\n{checkout.url}\n"
        "Les crédits sont ajoutés dès que le paiement est confirmé."
    )
