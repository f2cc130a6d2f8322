"""The HTTP side: Twilio's webhooks, health, metrics and the signed file links.

The inbound webhook only checks, stores and enqueues: the turn runs in a worker and answers
through the REST API, so Twilio gets its 200 in milliseconds whatever the model does.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web
from multidict import MultiDict
from sqlalchemy import select, text
from twilio.request_validator import RequestValidator

from bot import metrics
from bot.inbound import InboundWriter, MalformedWebhook, parse_params
from bot.links import check_link
from bot.models import OutboundMessage, User, UserFile
from bot.services import Services

log = logging.getLogger("bot.web")

SERVICES: web.AppKey[Services] = web.AppKey("services", Services)
TWIML_EMPTY = '<?xml version="1.0" encoding="UTF-8"?><Response/>'
# Progress order of delivery statuses: a late "sent" never overwrites "delivered".
STATUS_RANK = {"created": 0, "accepted": 1, "scheduled": 1, "queued": 2, "sending": 3, "sent": 4,
               "delivered": 5, "read": 6, "undelivered": 7, "failed": 7, "canceled": 7}
FAILED = frozenset({"undelivered", "failed"})
STATUS_KEY_TTL_S = 900


def services_of(request: web.Request) -> Services:
    return request.app[SERVICES]


def twiml() -> web.Response:
    return web.Response(text=TWIML_EMPTY, content_type="text/xml")


async def _signed_form(request: web.Request, services: Services) -> MultiDict[str] | web.Response:
    """The form when the request is genuinely from Twilio; else the error response to send."""
    signature = request.headers.get("X-Twilio-Signature", "")
    if not signature:
        log.warning("webhook without signature", extra={"path": request.path, "peer": request.remote})
        return web.Response(status=403, text="missing signature")
    raw = await request.read()
    if request.content_type != "application/x-www-form-urlencoded":
        return web.Response(status=400, text="expected application/x-www-form-urlencoded")
    try:
        pairs = parse_qsl(raw.decode("utf-8"), keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError):
        log.warning("webhook with bad encoding", extra={"path": request.path})
        return web.Response(status=400, text="body is not valid UTF-8 form data")
    form: MultiDict[str] = MultiDict(pairs)
    url = services.settings.public_base_url + request.raw_path
    validator: RequestValidator = request.app[VALIDATOR]
    # The exact URL first (one HMAC); the validator also tries it with and without the port.
    exact = hmac.compare_digest(validator.compute_signature(url, form), signature)
    if not exact and not validator.validate(url, form, signature):
        log.warning("webhook with wrong signature", extra={"path": request.path, "url": url})
        return web.Response(status=403, text="invalid signature")
    return form


async def inbound(request: web.Request) -> web.Response:
    started = time.perf_counter()
    services = services_of(request)
    form = await _signed_form(request, services)
    if isinstance(form, web.Response):
        metrics.INBOUND.labels("unknown", "rejected").inc()
        return form
    try:
        params = parse_params(form)
    except MalformedWebhook as exc:
        log.warning("malformed webhook", extra={"error": str(exc)})
        metrics.INBOUND.labels("unknown", "malformed").inc()
        return web.Response(status=400, text=f"malformed webhook: {exc}")
    try:
        user_id, inbound_id = await request.app[WRITER].submit(params, services.clock())
    except Exception:
        # Not stored, so not acknowledged: Twilio reports the failure and its fallback URL applies.
        log.exception("inbound message could not be stored", extra={"message_sid": params.message_sid})
        metrics.INBOUND.labels(params.channel, "error").inc()
        return web.Response(status=503, text="temporarily unavailable")
    if inbound_id is None:
        log.info("duplicate webhook", extra={"message_sid": params.message_sid, "user_id": user_id})
        metrics.INBOUND.labels(params.channel, "duplicate").inc()
    else:
        try:
            await services.state.push_user(user_id)
        except Exception:
            # The message is stored: the sweeper queues it once the shared state answers again.
            log.warning("could not queue an inbound message; the sweeper will", extra={"user_id": user_id})
        metrics.INBOUND.labels(params.channel, "accepted").inc()
    metrics.WEBHOOK_SECONDS.observe(time.perf_counter() - started)
    return twiml()


async def status(request: web.Request) -> web.Response:
    services = services_of(request)
    form = await _signed_form(request, services)
    if isinstance(form, web.Response):
        return form
    sid = form.get("MessageSid") or form.get("SmsSid") or ""
    new_status = (form.get("MessageStatus") or form.get("SmsStatus") or "").lower()
    if not sid or new_status not in STATUS_RANK:
        return web.Response(status=400, text="malformed status callback")
    metrics.STATUS_CALLBACKS.labels(new_status).inc()
    error_code = form.get("ErrorCode") or None
    async with services.sessions() as db:
        row = await db.scalar(select(OutboundMessage).where(OutboundMessage.sid == sid))
        if row is None:
            log.info("status for an unknown message", extra={"sid": sid, "status": new_status})
            return twiml()
        if STATUS_RANK[new_status] > STATUS_RANK.get(row.status, 0) or (error_code and not row.error_code):
            if STATUS_RANK[new_status] > STATUS_RANK.get(row.status, 0):
                row.status = new_status
            row.error_code = error_code or row.error_code
            row.updated_at = services.clock()
            if row.user_id is not None and new_status in FAILED:
                user = await db.get(User, row.user_id)
                if user is not None:
                    user.delivery_failures += 1
            elif row.user_id is not None and new_status in ("delivered", "read"):
                user = await db.get(User, row.user_id)
                if user is not None and user.delivery_failures:
                    user.delivery_failures = 0
        await db.commit()
    await services.state.kv_set(f"outstatus:{sid}", new_status, STATUS_KEY_TTL_S)
    if new_status in FAILED:
        log.warning("message not delivered", extra={"sid": sid, "error_code": error_code})
    return twiml()


async def serve_file(request: web.Request) -> web.StreamResponse:
    services = services_of(request)
    m = request.match_info
    file_id = check_link(services.settings, m["id"], m["expires"], m["sig"], m["name"])
    if file_id is None:
        return web.Response(status=404, text="link invalid or expired")
    async with services.sessions() as db:
        row = await db.get(UserFile, file_id)
    if row is None:
        return web.Response(status=404, text="file not found")
    headers = {
        "Content-Type": row.mime,
        "Content-Disposition": f'inline; filename="{m["name"]}"',
        "Cache-Control": "private, max-age=300",
        "X-Content-Type-Options": "nosniff",
    }
    if request.method == "HEAD":
        headers["Content-Length"] = str(row.size)
        return web.Response(status=200, headers=headers)
    data = await services.files.get(row.storage_key)
    return web.Response(body=data, headers=headers)


async def healthz(_request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def readyz(request: web.Request) -> web.Response:
    services = services_of(request)
    checks: dict[str, bool] = {}

    async def db_ok() -> bool:
        async with services.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        return True

    for name, probe in (("database", db_ok), ("state", services.state.ping)):
        try:
            checks[name] = bool(await asyncio.wait_for(probe(), 2.0))
        except Exception:
            checks[name] = False
    ready = all(checks.values())
    return web.json_response({"ready": ready, **checks}, status=200 if ready else 503)


async def metrics_view(_request: web.Request) -> web.Response:
    body, content_type = metrics.render()
    return web.Response(body=body, headers={"Content-Type": content_type})


VALIDATOR: web.AppKey[RequestValidator] = web.AppKey("validator", RequestValidator)
WRITER: web.AppKey[InboundWriter] = web.AppKey("inbound_writer", InboundWriter)


def create_app(services: Services, *, extra_routes: Iterable[Any] = ()) -> web.Application:
    """The web application. `extra_routes` are aiohttp route definitions owned by other modules
    (e.g. a payment webhook); their handlers reach the services with `services_of(request)`."""
    app = web.Application(client_max_size=2 * 1024 * 1024)
    app[SERVICES] = services
    app[VALIDATOR] = RequestValidator(services.settings.twilio_auth_token)
    app[WRITER] = InboundWriter(services.engine)

    async def stop_writer(app: web.Application) -> None:
        await app[WRITER].close()

    app.on_cleanup.append(stop_writer)
    app.router.add_post("/twilio/inbound", inbound)
    app.router.add_post("/twilio/status", status)
    app.router.add_get("/files/{id}/{expires}/{sig}/{name}", serve_file)  # answers HEAD too
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics_view)
    app.router.add_routes(list(extra_routes))
    return app
