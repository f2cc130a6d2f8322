"""Everything the bot sends goes through here: one channel's formatting, parts in order, records.

- WhatsApp: Markdown converted to WhatsApp's, parts of at most 1,600 characters, one file per
  message (a signed link Twilio fetches). Outside the 24 h window a free-form message fails
  (63016): an approved template (TWILIO_TEMPLATE_SID) is sent instead, else SMS.
- SMS: plain GSM-7 text in parts of at most two segments; a file becomes a link in the text.
- Twilio does not keep separate messages in order, so the next part leaves only once the
  previous one is reported sent (status callback) or after OUTBOUND_PART_WAIT_S.
- A user who opted out gets nothing, except the confirmation of the opt-out itself.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import sys
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TextIO

from bot import formatting, metrics
from bot.links import file_url, short_name
from bot.models import OutboundMessage, User, UserFile
from bot.services import Services
from bot.twilio_client import TwilioNotConfigured, TwilioSendError

log = logging.getLogger("bot.outbound")

WHATSAPP_WINDOW = timedelta(hours=24)
TEMPLATE_VARIABLE_MAX = 900  # a template's text plus variables must stay within 1,024 characters
SENT_OR_BETTER = frozenset({"sent", "delivered", "read"})
FAILED = frozenset({"failed", "undelivered"})
# Kinds that reach a user who opted out: only the confirmation that they did.
OPT_OUT_KINDS = frozenset({"optout"})
UNSUBSCRIBED = 21610  # Twilio: the recipient replied STOP to this sender

# The inbound message whose turn is running (set by the pipeline), recorded on every send.
current_inbound: contextvars.ContextVar[int | None] = contextvars.ContextVar("current_inbound", default=None)
# The database session of the running turn (Incoming.db). It is committed before anything is sent:
# what led to a message is durable before the message leaves, and SQLite's single writer is not
# held while we wait on Twilio (our own record of the send needs it).
current_session: contextvars.ContextVar[Any] = contextvars.ContextVar("current_session", default=None)


@dataclass
class SendResult:
    channel: str | None
    sids: list[str] = field(default_factory=list)
    skipped: str | None = None  # opted_out | window_closed | no_address | not_configured | empty
    error: str | None = None
    template: bool = False

    @property
    def ok(self) -> bool:
        return self.skipped is None and self.error is None and bool(self.sids)


class ConsoleSink:
    """`python -m bot chat`: replies printed in the terminal, files shown as local paths."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.lines: list[str] = []

    def show(self, to: str, text: str, media_path: str | None = None) -> None:
        if text:
            self.lines.append(text)
            print(f"\nDeblo > {text}", file=self.out)
        if media_path:
            self.lines.append(f"[file] {media_path}")
            print(f"Deblo > [fichier] {media_path}", file=self.out)
        self.out.flush()


def _whatsapp_address(user: User) -> str | None:
    ident = user.phone or user.external_id
    return f"whatsapp:{ident}" if ident else None


def in_whatsapp_window(services: Services, user: User) -> bool:
    last = user.last_whatsapp_inbound_at
    return last is not None and services.clock() - last < WHATSAPP_WINDOW


async def send_to_user(
    services: Services,
    user: User,
    *,
    text: str = "",
    media: UserFile | None = None,
    channel: str | None = None,
    kind: str = "reply",
) -> SendResult:
    """Sends `text` (Markdown) and/or one file to `user` on `channel` (default: their last one)."""
    if user.opted_out and kind not in OPT_OUT_KINDS:
        log.info("not sent: user opted out", extra={"user_id": user.id, "kind": kind})
        return SendResult(channel=channel, skipped="opted_out")
    if not text.strip() and media is None:
        return SendResult(channel=channel, skipped="empty")
    settings = services.settings
    channel = channel or user.last_channel or ("whatsapp" if settings.twilio_whatsapp_from else "sms")
    if services.console is not None or channel == "cli":
        return await _to_console(services, user.phone or str(user.id), text, media)
    if channel == "whatsapp":
        to = _whatsapp_address(user)
        if to is None:
            return SendResult(channel=channel, skipped="no_address")
        if in_whatsapp_window(services, user):
            return await _send_whatsapp(services, user.id, to, text, media, kind)
        if settings.twilio_template_sid:
            return await _send_template(services, user.id, to, text, kind)
        if user.phone and settings.twilio_sms_from:
            log.info("whatsapp window closed: SMS instead", extra={"user_id": user.id})
            return await _send_sms(services, user.id, user.phone, text, media, kind)
        log.warning("whatsapp window closed and no template nor SMS", extra={"user_id": user.id})
        return SendResult(channel=channel, skipped="window_closed")
    if not user.phone:
        return SendResult(channel="sms", skipped="no_address")
    return await _send_sms(services, user.id, user.phone, text, media, kind)


async def send_to_number(
    services: Services, number_e164: str, *, text: str, channel: str = "sms", kind: str = "notice"
) -> SendResult:
    """Sends to someone who may not be a user yet (a parent to confirm, the bug-report number).

    A number that belongs to a user who opted out is not sent to."""
    from sqlalchemy import select

    async with services.sessions() as db:
        user = await db.scalar(select(User).where(User.phone == number_e164))
    if user is not None and user.opted_out and kind not in OPT_OUT_KINDS:
        return SendResult(channel=channel, skipped="opted_out")
    if services.console is not None:
        return await _to_console(services, number_e164, text, None)
    user_id = user.id if user is not None else None
    if channel == "whatsapp":
        to = number_e164 if number_e164.startswith("whatsapp:") else f"whatsapp:{number_e164}"
        if user is None or not in_whatsapp_window(services, user):
            if services.settings.twilio_template_sid:
                return await _send_template(services, user_id, to, text, kind)
            return await _send_sms(services, user_id, number_e164.removeprefix("whatsapp:"), text, None, kind)
        return await _send_whatsapp(services, user_id, to, text, None, kind)
    return await _send_sms(services, user_id, number_e164, text, None, kind)


# --- channels --------------------------------------------------------------------------------


async def _to_console(services: Services, to: str, text: str, media: UserFile | None) -> SendResult:
    sink = services.console or ConsoleSink()
    path = None
    if media is not None:
        local = services.files.local_path(media.storage_key)
        path = str(local) if local is not None else file_url(services.settings, media)
    sink.show(to, formatting.to_whatsapp(text) if text else "", path)
    return SendResult(channel="cli", sids=["console"])


async def _send_whatsapp(services: Services, user_id: int | None, to: str, text: str,
                         media: UserFile | None, kind: str) -> SendResult:
    settings = services.settings
    messages: list[dict[str, Any]] = [
        {"body": part} for part in formatting.whatsapp_parts(formatting.to_whatsapp(text))
    ] if text.strip() else []
    if media is not None:
        messages.append({"body": "", "media_url": file_url(settings, media)})
    return await _send_parts(services, user_id, "whatsapp", to, settings.twilio_whatsapp_from, messages, kind)


async def _send_sms(services: Services, user_id: int | None, phone: str, text: str,
                    media: UserFile | None, kind: str) -> SendResult:
    settings = services.settings
    body = formatting.to_sms(text) if text.strip() else ""
    if media is not None:
        link = f"{formatting.to_gsm7(short_name(media.name))}: {file_url(settings, media)}"
        body = f"{body}\n\n{link}" if body else link
    messages = [{"body": part} for part in formatting.sms_parts(body)]
    return await _send_parts(services, user_id, "sms", phone, settings.twilio_sms_from, messages, kind)


async def _send_template(
    services: Services, user_id: int | None, to: str, text: str, kind: str
) -> SendResult:
    preview = formatting.to_plain(text).strip()
    if len(preview) > TEMPLATE_VARIABLE_MAX:
        preview = preview[: TEMPLATE_VARIABLE_MAX - 1].rsplit(" ", 1)[0] + "…"
    message = {
        "body": "",
        "content_sid": services.settings.twilio_template_sid,
        "content_variables": json.dumps({"1": preview}, ensure_ascii=False),
        "record_body": preview,
    }
    result = await _send_parts(services, user_id, "whatsapp", to, services.settings.twilio_whatsapp_from,
                               [message], kind)
    result.template = True
    return result


async def _send_parts(services: Services, user_id: int | None, channel: str, to: str, from_: str,
                      messages: list[dict[str, Any]], kind: str) -> SendResult:
    result = SendResult(channel=channel)
    if not messages:
        result.skipped = "empty"
        return result
    if not from_:
        log.error("no sender number configured", extra={"channel": channel})
        result.skipped = "not_configured"
        return result
    for index, message in enumerate(messages):
        sid, status, error = await _send_one(services, user_id, channel, to, from_, message, kind)
        if error is not None:
            result.error = error
            break
        result.sids.append(sid)
        if index < len(messages) - 1:
            status = await _wait_sent(services, sid, status)
            if status in FAILED:
                result.error = f"part {index + 1} was not delivered ({status})"
                break
    return result


async def _send_one(services: Services, user_id: int | None, channel: str, to: str, from_: str,
                    message: dict[str, Any], kind: str) -> tuple[str, str, str | None]:
    settings = services.settings
    body = message.get("body", "")
    fields: dict[str, Any] = {"to": to, "from_": from_,
                              "status_callback": settings.public_base_url + "/twilio/status"}
    if body:
        fields["body"] = body
    if message.get("media_url"):
        fields["media_url"] = [message["media_url"]]
    if message.get("content_sid"):
        fields["content_sid"] = message["content_sid"]
        fields["content_variables"] = message["content_variables"]
    turn_db = current_session.get()
    if turn_db is not None and turn_db.in_transaction():
        await turn_db.commit()
    async with services.sessions() as db:
        row = OutboundMessage(
            user_id=user_id, channel=channel, to_addr=to, body=message.get("record_body", body),
            media_url=message.get("media_url"), kind=kind, status="sending",
            segments=formatting.sms_segments(body)[1] if channel == "sms" else None,
            inbound_id=current_inbound.get(), created_at=services.clock(),
        )
        db.add(row)
        await db.commit()
        try:
            sent = await services.twilio.create_message(fields)
        except TwilioNotConfigured as exc:
            row.status, row.updated_at = "failed", services.clock()
            await db.commit()
            metrics.OUTBOUND.labels(channel, "not_configured").inc()
            log.error("twilio is not configured", extra={"error": str(exc)})
            return "", "failed", str(exc)
        except TwilioSendError as exc:
            row.status = "unknown" if exc.ambiguous else "failed"
            row.error_code = str(exc.code or exc.status or "")[:16] or None
            row.updated_at = services.clock()
            await db.commit()
            metrics.OUTBOUND.labels(channel, row.status).inc()
            if exc.code == UNSUBSCRIBED and user_id is not None:
                # The carrier already has this person's STOP: record it, send nothing more.
                user = await db.get(User, user_id)
                if user is not None and not user.opted_out:
                    user.opted_out, user.opted_out_at = True, services.clock()
                    await db.commit()
            log.error("send failed", extra={"channel": channel, "code": exc.code, "http_status": exc.status,
                                            "ambiguous": exc.ambiguous, "error": str(exc)})
            return "", row.status, str(exc)
        row.sid = sent.sid
        # A status callback may already have arrived and been recorded: keep the further one.
        if row.status == "sending":
            row.status = sent.status
        row.updated_at = services.clock()
        await db.commit()
    metrics.OUTBOUND.labels(channel, "sent").inc()
    return sent.sid, sent.status, None


async def _wait_sent(services: Services, sid: str, status: str) -> str:
    """Waits until Twilio reports `sid` sent (or failed), at most OUTBOUND_PART_WAIT_S."""
    if status in SENT_OR_BETTER or status in FAILED:
        return status
    loop = asyncio.get_running_loop()
    deadline = loop.time() + services.settings.outbound_part_wait_s
    delay = 0.02
    while loop.time() < deadline:
        seen = await services.state.kv_get(f"outstatus:{sid}")
        if seen in SENT_OR_BETTER or seen in FAILED:
            return seen
        await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
        delay = min(delay * 1.5, 0.2)
    return status
