"""The HTTP side: Twilio's webhooks, health, metrics and the signed file links.

The inbound webhook only checks, stores and enqueues: the turn runs in a worker and answers
through the REST API, so Twilio gets its 200 in milliseconds whatever the model does.

With the database down, a checked webhook (inbound message or status callback) that is not stored
within SPOOL_AFTER_S is kept in the local spool (bot.channel.spool) and still answered 200; a background
task of the app replays the spool in order once the database answers. Only a full spool
(SPOOL_MAX_BYTES) or a disk that refuses the write gets 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler
from multidict import MultiDict
from sqlalchemy import case, or_, select, text, update
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from bot import logs, metrics
from bot.channel import gauges
from bot.channel import webhook_checks as checks
from bot.channel.app_keys import SERVICES, services_of
from bot.channel.download import send_file
from bot.channel.inbound import InboundWriter, MalformedWebhook, clean_form, has_control, parse_params
from bot.channel.links import ID_PATTERN, check_link
from bot.channel.locale import default_locale
from bot.channel.malformed import quiet_parse_errors, refuse_malformed
from bot.channel.metering import RETURNED, price_sent, priced_values
from bot.channel.outbound import note_status
from bot.channel.spool import Spool, SpoolEntry, entry_addresses
from bot.services import Services
from bot.storage.erasures import erased_since
from bot.storage.models import OutboundMessage, User, UserFile

log = logging.getLogger("bot.channel.web")

TWIML_EMPTY = '<?xml version="1.0" encoding="UTF-8"?><Response/>'
# Progress order of delivery statuses: a late "sent" never overwrites "delivered".
STATUS_RANK = {"created": 0, "accepted": 1, "scheduled": 1, "queued": 2, "sending": 3, "sent": 4,
               "delivered": 5, "read": 6, "undelivered": 7, "failed": 7, "canceled": 7}
FAILED = frozenset({"undelivered", "failed"})
STATUS_KEY_TTL_S = 900
UNKNOWN_SID_WAIT_S = 3.0


def twiml() -> web.Response:
    return web.Response(text=TWIML_EMPTY, content_type="text/xml")


async def _signed_form(request: web.Request, services: Services,
                       channel: str) -> MultiDict[str] | web.Response:
    """The form when the request is genuinely from Twilio for our account; else the error response
    to send (bot.channel.webhook_checks: size and field caps first, then signature and account)."""
    settings = services.settings
    raw = await checks.read_capped(request, settings.webhook_max_bytes)
    if raw is None:
        logs.warning_sampled(log, "webhook body too large", {
            "path": request.path, "peer": request.remote, "declared": request.content_length})
        metrics.inbound(channel, "too_large").inc()
        return await checks.refuse_unread(request, "request body too large")
    signature = request.headers.get("X-Twilio-Signature", "")
    if not signature:
        logs.warning_sampled(log, "webhook without signature", {"path": request.path, "peer": request.remote})
        metrics.inbound(channel, "rejected").inc()
        return web.Response(status=403, text="missing signature")
    if request.content_type != "application/x-www-form-urlencoded":
        metrics.inbound(channel, "rejected").inc()
        return web.Response(status=400, text="expected application/x-www-form-urlencoded")
    if checks.field_count(raw) > checks.MAX_FIELDS:
        logs.warning_sampled(log, "webhook with too many fields",
                             {"path": request.path, "peer": request.remote})
        metrics.inbound(channel, "too_large").inc()
        return checks.too_large("too many form fields")
    try:
        pairs = checks.parse_form(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        logs.warning_sampled(log, "webhook with bad encoding", {"path": request.path})
        metrics.inbound(channel, "rejected").inc()
        return web.Response(status=400, text="body is not valid UTF-8 form data")
    form: MultiDict[str] = MultiDict(pairs)
    url = settings.public_base_url + request.raw_path
    if not checks.signature_matches(settings.twilio_auth_token, url, form, signature):
        logs.warning_sampled(log, "webhook with wrong signature", {"path": request.path, "url": url})
        metrics.inbound(channel, "rejected").inc()
        return web.Response(status=403, text="invalid signature")
    if not checks.account_matches(form, settings.twilio_account_sid):
        log.warning("webhook for another Twilio account", extra={
            "path": request.path, "account_sid": form.get("AccountSid", "")[:64]})
        metrics.inbound(channel, "wrong_account").inc()
        return web.Response(status=403, text="not this account")
    # Cleaned once checked (Twilio signed what it sent): nothing stored or spooled holds a NUL.
    return MultiDict(clean_form(form.items())) if has_control(raw) else form


async def inbound(request: web.Request) -> web.Response:
    started = time.perf_counter()
    services = services_of(request)
    form = await _signed_form(request, services, "unknown")
    if isinstance(form, web.Response):
        return form
    try:
        params = parse_params(form)
    except MalformedWebhook as exc:
        log.warning("malformed webhook", extra={"error": str(exc)})
        metrics.inbound("unknown", "malformed").inc()
        return web.Response(status=400, text=f"malformed webhook: {exc}")
    logs.bind(message_sid=params.message_sid)  # and inbound_id once stored: the ids workers log too
    received_at = services.clock()
    spool = request.app[SPOOL]
    stored: tuple[int, int | None] | None = None
    if not spool.pending:  # else behind what is spooled already: a user's messages keep their order
        try:
            stored = await request.app[WRITER].submit(params, received_at, services.settings.spool_after_s)
        except Exception as exc:
            log.warning("inbound message not stored, spooling it",
                        extra={"message_sid": params.message_sid, "error": repr(exc)[:300]})
    if stored is None:
        return await _spool(request, SpoolEntry("inbound", received_at, list(form.items())), params.channel)
    user_id, inbound_id = stored
    if inbound_id is None:
        log.info("duplicate webhook", extra={"message_sid": params.message_sid, "user_id": user_id})
        metrics.inbound(params.channel, "duplicate").inc()
    else:
        logs.bind(inbound_id=inbound_id, user_id=user_id)
        try:
            await services.state.push_user(user_id)
        except Exception:
            # The message is stored: the sweeper queues it once the shared state answers again.
            log.warning("could not queue an inbound message; the sweeper will", extra={"user_id": user_id})
        log.info("inbound message stored", extra={"channel": params.channel})
        metrics.inbound(params.channel, "accepted").inc()
    metrics.WEBHOOK_SECONDS.observe(time.perf_counter() - started)
    return twiml()


async def _spool(request: web.Request, entry: SpoolEntry, channel: str) -> web.Response:
    """Keeps a checked webhook on disk and acknowledges it; 503 only when even that fails."""
    try:
        await request.app[SPOOL].append(entry)
    except Exception:
        log.exception("webhook could not be spooled", extra={"kind": entry.kind})
        metrics.inbound(channel, "error").inc()
        return web.Response(status=503, text="temporarily unavailable")
    metrics.inbound(channel, "spooled").inc()
    request.app[REPLAY_NOW].set()
    return twiml()


def _status_fields(form: MultiDict[str]) -> tuple[str, str] | None:
    sid = form.get("MessageSid") or form.get("SmsSid") or ""
    new_status = (form.get("MessageStatus") or form.get("SmsStatus") or "").lower()
    return (sid, new_status) if sid and new_status in STATUS_RANK else None


def _status_update(sid: str, new_status: str, error_code: str | None, now: Any, form: Any) -> Any:
    """The one statement a status callback is: the row moves forward to `new_status` (a late "sent"
    never overwrites "delivered"), takes the callback's ErrorCode and, when Twilio sent it, its price
    (`metering.priced_values`); it matches no row when there is nothing to change. Returns the user
    id of the row it changed, that user's count of delivery failures, and RETURNED."""
    ahead = [s for s, rank in STATUS_RANK.items() if rank >= STATUS_RANK[new_status]]
    behind = or_(OutboundMessage.status.is_(None), OutboundMessage.status.not_in(ahead))
    values: dict[str, Any] = {"status": case((behind, new_status), else_=OutboundMessage.status),
                              "updated_at": now, **priced_values(new_status, form)}
    changes: Any = behind
    if error_code:
        values["error_code"] = error_code
        changes = or_(behind, OutboundMessage.error_code.is_(None))
    # The user's count of failures comes back too: a delivery clears it only when there is one.
    failures = select(User.delivery_failures).where(User.id == OutboundMessage.user_id).scalar_subquery()
    return (update(OutboundMessage).where(OutboundMessage.sid == sid, changes).values(**values)
            .returning(OutboundMessage.user_id, failures, *RETURNED)
            .execution_options(synchronize_session=False))


async def _apply_status(db: Any, sid: str, new_status: str, error_code: str | None,
                        now: Any, form: Any) -> tuple[bool, Any] | None:
    """(changed, the changed row as `_status_update` returns it) once the row with this SID is found;
    None when it never was. Twilio may call back before the sender has saved the SID its create call
    just returned, so an unknown SID is looked for again for a short while (well within
    SPOOL_AFTER_S), each time in a fresh transaction that sees the sender's commit."""
    deadline = time.monotonic() + UNKNOWN_SID_WAIT_S
    while True:
        changed = (await db.execute(_status_update(sid, new_status, error_code, now, form))).first()
        if changed is not None:
            return True, changed
        if await db.scalar(select(OutboundMessage.id).where(OutboundMessage.sid == sid)) is not None:
            return False, None  # known, and already as far (a late or repeated callback)
        if time.monotonic() >= deadline:
            return None
        await db.rollback()
        await asyncio.sleep(0.1)


async def record_status(services: Services, form: MultiDict[str]) -> None:
    """Records a (checked, well-formed) status callback on its outbound row: one UPDATE, and the
    user's delivery health when it failed or delivered (`note_status`)."""
    fields = _status_fields(form)
    assert fields is not None
    sid, new_status = fields
    error_code = form.get("ErrorCode") or None
    async with services.sessions() as db:
        applied = await _apply_status(db, sid, new_status, error_code, services.clock(), form)
        if applied is None:
            log.info("status for an unknown message", extra={"sid": sid, "status": new_status})
            return
        changed, row = applied
        if changed:
            # Counts towards the user's delivery health: repeated permanent failures stop proactive sends.
            await note_status(services, db, row[0], new_status, failures=row[1])
            await price_sent(db, services.settings.costs.cost_rates_file, sid, new_status, row[2:], form)
        await db.commit()
    if new_status in FAILED:
        log.warning("message not delivered", extra={"sid": sid, "error_code": error_code})


async def status(request: web.Request) -> web.Response:
    services = services_of(request)
    form = await _signed_form(request, services, "status")
    if isinstance(form, web.Response):
        return form
    fields = _status_fields(form)
    if fields is None:
        logs.warning_sampled(log, "malformed status callback", {"path": request.path})
        return web.Response(status=400, text="malformed status callback")
    sid, new_status = fields
    metrics.STATUS_CALLBACKS.labels(new_status).inc()
    if new_status in FAILED:
        metrics.TWILIO_DELIVERY_ERRORS.labels(new_status, metrics.error_code(form.get("ErrorCode"))).inc()
    try:
        # First, for the sender waiting to send the next part (it reads the shared state only).
        await services.state.kv_set(f"outstatus:{sid}", new_status, STATUS_KEY_TTL_S)
    except Exception:
        log.warning("could not share a message status", extra={"sid": sid})
    if not request.app[SPOOL].pending:
        # Not cancelled when late: a session cut in the middle of a locked SQLite write would wait
        # for the lock anyway to give its connection back. Left to finish; the spooled copy is
        # recorded again later, harmlessly (a status only moves forward).
        task = asyncio.create_task(record_status(services, form))
        request.app[BACKGROUND].add(task)
        task.add_done_callback(request.app[BACKGROUND].discard)
        await asyncio.wait({task}, timeout=services.settings.spool_after_s)
        if task.done() and task.exception() is None:
            return twiml()
        error = repr(task.exception()) if task.done() else "timed out"
        log.warning("status not recorded, spooling it", extra={"sid": sid, "error": error[:300]})
    return await _spool(request, SpoolEntry("status", services.clock(), list(form.items())), "status")


async def replay_entry(app: web.Application, entry: SpoolEntry) -> None:
    """Stores one spooled webhook as if it had just been received (at its own arrival time)."""
    await store_entry(app[SERVICES], app[WRITER], entry)


async def store_entry(services: Services, writer: InboundWriter, entry: SpoolEntry) -> bool:
    """Stores one spooled (or set-aside) webhook; raises what the database raises. False when it is
    dropped instead: its number was erased after it came (a user, a row, an answer would be back)."""
    async with services.sessions() as db:
        secret = services.settings.secret_key
        erased = await erased_since(db, secret, entry_addresses(entry), entry.received_at)
    if erased:
        log.warning("spooled webhook of an erased number dropped", extra={"kind": entry.kind})
        return False
    form: MultiDict[str] = MultiDict(clean_form(entry.form))  # a spool written before the cleaning
    if entry.kind == "status":
        if _status_fields(form) is not None:
            await record_status(services, form)
        return True
    try:
        params = parse_params(form)
    except MalformedWebhook as exc:  # checked before it was spooled: only a hand-edited file
        log.warning("spooled webhook skipped", extra={"error": str(exc)})
        return True
    user_id, inbound_id = await writer.submit(params, entry.received_at)
    if inbound_id is not None:
        metrics.inbound(params.channel, "accepted").inc()
        with contextlib.suppress(Exception):  # the sweeper queues it otherwise
            await services.state.push_user(user_id)
    return True


def refused_by_database(services: Services) -> Callable[[BaseException], Awaitable[bool]]:
    """Whether a failure to store a spooled entry is the entry's own: the database answered (a
    probe succeeds) and the error is no sign of an outage (connection, lock, time-out)."""
    async def refused(exc: BaseException) -> bool:
        if isinstance(exc, OSError | TimeoutError | OperationalError | InterfaceError):
            return False
        if isinstance(exc, DBAPIError) and exc.connection_invalidated:
            return False
        try:
            async with asyncio.timeout(services.settings.spool_after_s):
                async with services.engine.connect() as conn:
                    await conn.execute(text("SELECT 1"))
        except Exception:
            return False
        return True

    return refused


async def _replayer(app: web.Application) -> None:
    """Replays the spool whenever something is in it, every SPOOL_REPLAY_S until it works."""
    spool, wake = app[SPOOL], app[REPLAY_NOW]
    interval = app[SERVICES].settings.spool_replay_s
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), interval)
        wake.clear()
        if not spool.look():
            continue
        try:
            count = await spool.replay(lambda entry: replay_entry(app, entry),
                                       refused_by_database(app[SERVICES]))
            if count:
                log.warning("spooled webhooks stored", extra={"entries": count})
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("spool not replayed yet", extra={"error": repr(exc)[:300]})


# Types a browser shows without running anything of the file on our origin. Everything else (HTML,
# SVG, XML, scripts, unknown types) is a download in a sandbox with no script and no same-origin.
INLINE_TYPES = frozenset({
    "application/pdf",
    "image/png",
    "image/jpeg",
    "image/webp",
    "image/gif",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "application/msword",
    "application/vnd.ms-excel",
    "application/vnd.ms-powerpoint",
})
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def file_headers(mime: str, name: str) -> dict[str, str]:
    """Headers of a served file: inline only for INLINE_TYPES; otherwise an attachment with
    `Content-Security-Policy: sandbox`, so an uploaded HTML or SVG never runs on this domain even
    if a browser shows it. The declared type is kept (Twilio checks it against the media)."""
    base = mime.split(";", 1)[0].strip().lower()
    safe_name = _SAFE_NAME.sub("_", name)[:120] or "file"
    headers = {
        "Content-Type": mime,
        "Cache-Control": "private, max-age=300",
        "X-Content-Type-Options": "nosniff",
    }
    if base in INLINE_TYPES:
        headers["Content-Disposition"] = f'inline; filename="{safe_name}"'
    else:
        headers["Content-Disposition"] = f'attachment; filename="{safe_name}"'
        headers["Content-Security-Policy"] = "sandbox"
    return headers


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
    try:  # in chunks, with Range and If-None-Match (bot.channel.download)
        return await send_file(request, services.files, row.storage_key, file_headers(row.mime, m["name"]))
    except FileNotFoundError:
        log.warning("a stored file is missing", extra={"file_id": file_id})
        return web.Response(status=404, text="file not found")


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


async def metrics_view(request: web.Request) -> web.Response:
    await gauges.refresh(services_of(request))  # queue depth, oldest pending, jobs: from the database
    body, content_type = metrics.render()
    return web.Response(body=body, headers={"Content-Type": content_type})


async def metrics_with_token(request: web.Request) -> web.Response:
    """/metrics on the public port (only with METRICS_TOKEN): the counters and gauges say how busy
    the bot is and how its sends fare, which is for the operator's scraper, not for anyone."""
    expected = f"Bearer {services_of(request).settings.metrics_token}".encode()
    given = request.headers.get("Authorization", "").encode()
    if not hmac.compare_digest(given, expected):
        return web.Response(status=401, text="metrics need their token",
                            headers={"WWW-Authenticate": 'Bearer realm="metrics"'})
    return await metrics_view(request)


WRITER: web.AppKey[InboundWriter] = web.AppKey("inbound_writer", InboundWriter)
SPOOL: web.AppKey[Spool] = web.AppKey("spool", Spool)
REPLAY_NOW: web.AppKey[asyncio.Event] = web.AppKey("replay_now", asyncio.Event)
BACKGROUND: web.AppKey[set[asyncio.Task[None]]] = web.AppKey("background", set)


@web.middleware
async def log_scope(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The ids a request's handler binds (bot.logs) end with it: a keep-alive connection serves
    one request after another, and none may carry the ids of the one before."""
    with logs.scope():
        return await handler(request)


def create_metrics_app(services: Services) -> web.Application:
    """What `serve` and `worker` serve on METRICS_PORT: the process's own counters (turns, model
    calls, sends, refusals happen in workers) for Prometheus, and a liveness check. No webhook is
    taken there, and no token asked: the port is meant for the private network only."""
    app = web.Application()
    app[SERVICES] = services
    app.router.add_get("/metrics", metrics_view)
    app.router.add_get("/healthz", healthz)
    return app


async def start_metrics_site(services: Services) -> web.AppRunner | None:
    """The metrics app listening on HOST:METRICS_PORT; None when METRICS_PORT is 0."""
    port = services.settings.metrics_port
    if not port:
        return None
    runner = web.AppRunner(create_metrics_app(services), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, services.settings.host, port).start()
    return runner


def create_app(services: Services, *, extra_routes: Iterable[web.AbstractRouteDef] = ()) -> web.Application:
    """The web application. `extra_routes` are aiohttp route definitions owned by other modules
    (e.g. a payment webhook); their handlers reach the services with `services_of(request)`."""
    # No POST this app takes (Twilio's forms, a payment provider's JSON) comes near WEBHOOK_MAX_BYTES.
    app = web.Application(client_max_size=services.settings.webhook_max_bytes,
                          middlewares=[log_scope, refuse_malformed])
    quiet_parse_errors()
    app[SERVICES] = services
    app[WRITER] = InboundWriter(services.engine, defaults=default_locale(services.settings),
                                rates_file=services.settings.costs.cost_rates_file)
    app[SPOOL] = Spool(services.settings.data_dir / "spool", services.settings.spool_max_bytes,
                       services.settings.spool_max_attempts)
    app[REPLAY_NOW] = asyncio.Event()
    app[BACKGROUND] = set()

    async def stop_writer(app: web.Application) -> None:
        await app[WRITER].close()

    async def replayer(app: web.Application) -> AsyncIterator[None]:
        # Started with the server: webhooks spooled before a restart are stored at once.
        app[REPLAY_NOW].set()
        task = asyncio.create_task(_replayer(app), name="spool-replayer")
        yield
        for pending in [task, *app[BACKGROUND]]:
            pending.cancel()
        await asyncio.gather(task, *app[BACKGROUND], return_exceptions=True)

    app.cleanup_ctx.append(replayer)
    app.on_cleanup.append(stop_writer)
    app.router.add_post("/twilio/inbound", inbound)
    app.router.add_post("/twilio/status", status)
    # An id in another spelling (`007`) matches no route: 404. Answers HEAD too.
    app.router.add_get(f"/files/{{id:{ID_PATTERN}}}/{{expires}}/{{sig}}/{{name}}", serve_file)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    if services.settings.metrics_token:  # else 404: metrics are served on METRICS_PORT only
        app.router.add_get("/metrics", metrics_with_token)
    app.router.add_routes(list(extra_routes))
    return app
