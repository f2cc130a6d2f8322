"""The local provider's checkout page, `/pay/<reference>`: the link the bot sends with
PAYMENT_PROVIDER=local, so that someone trying the bot can "pay" and see the credits arrive.

No money moves. GET shows the pack and a button; POST (with the page's token, an HMAC of the
reference under SECRET_KEY, so another site cannot post it) completes the payment through the very
path the signed webhook takes (`handle_webhook`), so credits, the ledger and the user's message are
what a real payment gives, once. With any other provider the page does not exist (404)."""

from __future__ import annotations

import hashlib
import hmac
import json

from aiohttp import web
from sqlalchemy import select

from bot.billing.payments import handle_webhook
from bot.billing.payments.local import signature
from bot.channel.malformed import read_form
from bot.services import Services
from bot.storage.models import Payment, User
from bot.texts import fr_en
from bot.web.render import html_response

PATH = "/pay/{reference}"
FORM_MAX_BYTES = 4 * 1024  # one token


def page_token(secret_key: str, reference: str) -> str:
    return hmac.new(secret_key.encode(), f"pay:{reference}".encode(), hashlib.sha256).hexdigest()


async def _payment(services: Services, reference: str) -> tuple[Payment, str] | None:
    """The local payment and its user's language, or None (unknown, another provider's)."""
    if services.settings.payment_provider != "local" or not services.settings.payment_secret:
        return None
    async with services.sessions() as db:
        row = (await db.execute(select(Payment, User.language).join(User, User.id == Payment.user_id)
                                .where(Payment.reference == reference[:128]))).first()
    if row is None or row[0].provider != "local":
        return None
    return row[0], row[1]


def _page(services: Services, payment: Payment, language: str, *, status: int = 200,
          notice: str = "") -> web.Response:
    return html_response("pay.html", status=status, lang=fr_en(language, "fr", "en"),
                         title="Deblo", payment=payment, notice=notice,
                         token=page_token(services.settings.secret_key, payment.reference))


async def show(request: web.Request) -> web.Response:
    from bot.channel.app_keys import services_of

    services = services_of(request)
    found = await _payment(services, request.match_info["reference"])
    if found is None:
        raise web.HTTPNotFound()
    return _page(services, *found)


async def confirm(request: web.Request) -> web.Response:
    from bot.channel.app_keys import services_of

    services = services_of(request)
    found = await _payment(services, request.match_info["reference"])
    if found is None:
        raise web.HTTPNotFound()
    payment, language = found
    given = (await read_form(request, FORM_MAX_BYTES)).get("token", "").encode()
    if not hmac.compare_digest(given, page_token(services.settings.secret_key, payment.reference).encode()):
        return _page(services, payment, language, status=403, notice="forbidden")
    body = json.dumps({"reference": payment.reference, "status": "paid", "amount": payment.amount,
                       "currency": payment.currency}).encode()
    outcome = await handle_webhook(services, "local", {"x-deblo-signature": signature(
        services.settings.payment_secret, body)}, body)
    found = await _payment(services, payment.reference)
    assert found is not None
    return _page(services, found[0], language, status=200 if outcome.http_status == 200 else 502,
                 notice="done" if outcome.http_status == 200 else "failed")


ROUTES: list[web.RouteDef] = [web.get(PATH, show), web.post(PATH, confirm)]
