"""The payment providers' webhook: POST /payments/webhook/{provider}, mounted by bot/cli.py, and
GET /payments/done, where the provider's checkout sends the customer's browser back.

create_app(services, extra_routes=bot.web.payment_webhook.ROUTES)
"""

from __future__ import annotations

from aiohttp import web

from bot.billing.payments import handle_webhook
from bot.render import render
from bot.web import pay_page as local_page

MAX_BODY = 256 * 1024
PATH = "/payments/webhook/{provider}"


async def read_body(request: web.Request, cap: int) -> bytes | None:
    """The whole body, however many TCP segments it came in (None above `cap` bytes).

    `request.content.read(n)` returns what has arrived so far, so a signed body sent in two
    segments would be cut and fail its HMAC; `request.read()` waits for the end (chunked bodies
    too) and stops at the app's client_max_size.
    """
    if request.content_length is not None and request.content_length > cap:
        return None
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        return None
    return body if len(body) <= cap else None


async def payment_webhook(request: web.Request) -> web.Response:
    from bot.channel.app_keys import services_of

    body = await read_body(request, MAX_BODY)
    if body is None:
        return web.json_response({"ok": False, "error": "body too large"}, status=413)
    outcome = await handle_webhook(
        services_of(request), request.match_info["provider"], request.headers, body
    )
    return web.json_response(
        {"ok": outcome.http_status == 200, "detail": outcome.detail}, status=outcome.http_status
    )


async def payment_done(_request: web.Request) -> web.Response:
    # Only a courtesy page: the redirect proves nothing, the signed webhook is what credits.
    return web.Response(text=render("payments/done.html"), content_type="text/html")


ROUTES: list[web.RouteDef] = [web.post(PATH, payment_webhook), web.get("/payments/done", payment_done),
                              *local_page.ROUTES]  # /pay/…: only with PAYMENT_PROVIDER=local
