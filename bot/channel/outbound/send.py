"""Sending to a user or a number: one channel's formatting, parts in order, files kept.

- WhatsApp: Markdown converted to WhatsApp's, parts of at most 1,600 characters, one file per
  message (a signed link Twilio fetches) carrying the text as its caption when the text fits one
  (1,024 characters; `whatsapp_messages`), else after the text with its name as caption (each
  message is billed). Outside the 24 h window a free-form message fails (63016): an approved
  template (TWILIO_TEMPLATE_SID) is sent instead, else SMS.
- A file outside the window: by SMS as a link that lasts days (FILE_LINK_SMS_TTL_S), else as the
  template's link variable (TWILIO_TEMPLATE_LINK_VARIABLE), else it waits (PendingDelivery) and
  goes out when the user next writes (handlers.waiting_files); a template, when there is one,
  tells them so.
- An approved template of the caller's own (`send_template`: the review reminder after a silence)
  goes by its content sid and variables, inside the window or not, and falls back to nothing else.
- SMS: plain GSM-7 text in parts of at most two segments; a file becomes a link in the text.
- Twilio does not keep separate messages in order, so the next part leaves only once the
  previous one is reported sent (status callback) or after OUTBOUND_PART_WAIT_S.
- A user who opted out gets nothing, except the confirmation of the opt-out itself (OPT_OUT_KINDS);
  proactive kinds do not reach a user whose delivery is blocked (`health`). A user erased since the
  caller loaded them gets nothing, and no row is written for them (skipped "erased").
- `python -m bot chat` (Services.console) or the `cli` channel: shown in the terminal
  (bot.channel.console).

A part that waits in the outbox makes the result `queued` (reason "queued"): not delivered yet,
and the caller must not send it again. Imports `result`, `scope`, `health` and `attempt`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from sqlalchemy import ColumnElement, SQLColumnExpression, and_, select

from bot.channel import console, formatting
from bot.channel.links import file_url, short_name
from bot.channel.outbound.attempt import (
    DIRECT_KINDS,
    OPT_OUT_KINDS,
    is_retryable,
    send_one,
    tell_failures,
    wait_sent,
)
from bot.channel.outbound.health import FAILED, delivery_blocked, stored_refusal, user_gone
from bot.channel.outbound.result import SendResult
from bot.channel.outbound.scope import commit_turn, current_reply_from
from bot.channel.twilio_client import SendExpired, TwilioNotConfigured
from bot.config import Settings
from bot.services import Services
from bot.storage.models import PendingDelivery, User, UserFile
from bot.texts import fr_en

log = logging.getLogger("bot.channel.outbound")

WHATSAPP_WINDOW = timedelta(hours=24)
TEMPLATE_VARIABLE_MAX = 900  # a template's text plus variables must stay within 1,024 characters
UNSUBSCRIBED = 21610  # Twilio: the recipient replied STOP to this sender


def _whatsapp_address(user: User) -> str | None:
    ident = user.phone or user.external_id
    return f"whatsapp:{ident}" if ident else None


def _bare(address: str) -> str:
    return address.removeprefix("whatsapp:")


def whatsapp_sender(settings: Settings, user: User | None) -> str:
    """Our WhatsApp number that writes to `user`: TWILIO_WHATSAPP_FROM_PRO for a pro user when it is
    set, else TWILIO_WHATSAPP_FROM; while their own message is answered, the one of ours they wrote
    to (WhatsApp's 24 h window is per pair of numbers: it is the one open)."""
    students, pro = settings.twilio_whatsapp_from, settings.twilio_whatsapp_from_pro
    if not pro or _bare(pro) == _bare(students) or user is None:
        return students
    answering = current_reply_from.get()
    if answering is not None and answering[0] == user.id:
        for ours in (students, pro):
            if _bare(answering[1]) == _bare(ours):
                return ours
    return pro if user.mode == "pro" else students


def in_whatsapp_window(services: Services, user: User) -> bool:
    last = user.last_whatsapp_inbound_at
    return last is not None and services.clock() - last < WHATSAPP_WINDOW


def _to_console(services: Services, to: str, text: str, media: UserFile | None) -> SendResult:
    """Shown in the terminal (bot.channel.console): accepted, as a send Twilio took."""
    console.show(services, to, text, media)
    return SendResult(channel="cli", sids=["console"])


async def send_to_user(
    services: Services,
    user: User,
    *,
    text: str = "",
    media: UserFile | None = None,
    channel: str | None = None,
    kind: str = "reply",
    content: tuple[str, str] | None = None,
) -> SendResult:
    """Sends `text` (Markdown) and/or one file to `user` on `channel` (default: their last one).

    `content` (a content sid and its variables as JSON, bot.channel.buttons) goes instead of the
    text on WhatsApp inside the window, `text` kept as its record; never queued for a retry: the
    caller sends the text when it is not taken at once."""
    if user.opted_out and kind not in OPT_OUT_KINDS:
        log.info("not sent: user opted out", extra={"user_id": user.id, "kind": kind})
        return SendResult(channel=channel, skipped="opted_out")
    if not text.strip() and media is None:
        return SendResult(channel=channel, skipped="empty")
    settings = services.settings
    channel = channel or user.last_channel or ("whatsapp" if settings.twilio_whatsapp_from else "sms")
    if services.console is not None or channel == "cli":
        return _to_console(services, user.phone or str(user.id), text, media)
    # Whether they opted out or were erased meanwhile is read where each part is recorded (send_one).
    if channel == "whatsapp":
        to = _whatsapp_address(user)
        if to is None:
            return SendResult(channel=channel, skipped="no_address")
        from_ = whatsapp_sender(settings, user)
        if in_whatsapp_window(services, user):
            if content is not None and media is None:
                return await _send_parts(services, user.id, "whatsapp", to, from_,
                                         [_content_message(content, text)], kind)
            return await _send_whatsapp(services, user.id, to, from_, text, media, kind)
        # Read before: outside the window a file may be kept for later, not only sent.
        refused = await _refused(services, user, channel, kind)
        return refused or await _outside_window(services, user, to, text, media, kind)
    if not user.phone:
        return SendResult(channel="sms", skipped="no_address")
    return await _send_sms(services, user.id, user.phone, text, media, kind)


async def send_template(services: Services, user: User, content_sid: str, variables: Mapping[str, str], *,
                        text: str, kind: str) -> SendResult:
    """Sends the approved WhatsApp template `content_sid` filled with `variables` (`text`: what it
    says, kept as its record). Never TWILIO_TEMPLATE_SID nor SMS instead: what it is for is the caller's."""
    if user.opted_out and kind not in OPT_OUT_KINDS:
        log.info("not sent: user opted out", extra={"user_id": user.id, "kind": kind})
        return SendResult(channel="whatsapp", skipped="opted_out")
    if services.console is not None:
        return _to_console(services, user.phone or str(user.id), text, None)
    to = _whatsapp_address(user)
    if to is None:
        return SendResult(channel="whatsapp", skipped="no_address")
    refused = await _refused(services, user, "whatsapp", kind)
    if refused is not None:
        return refused
    message = {"body": "", "content_sid": content_sid, "template": True, "record_body": _template_text(text),
               "content_variables": json.dumps(dict(variables), ensure_ascii=False)}
    result = await _send_parts(services, user.id, "whatsapp", to, whatsapp_sender(services.settings, user),
                               [message], kind)
    result.template = True
    return result


def _not_sent(user_id: int | None, channel: str | None, kind: str, skipped: str,
              reason: str | None) -> SendResult:
    what = {"opted_out": "user opted out meanwhile", "erased": "user erased meanwhile"}.get(
        skipped, "delivery blocked")
    log.info(f"not sent: {what}", extra={"user_id": user_id, "kind": kind, "reason": reason})
    return SendResult(channel=channel, skipped=skipped, detail=reason)


async def _refused(services: Services, user: User, channel: str, kind: str) -> SendResult | None:
    """The user's row as stored now, in a read of its own, says the message must not go."""
    if kind in OPT_OUT_KINDS:
        return None
    refused = await stored_refusal(services, user.id, proactive=kind not in DIRECT_KINDS)
    return None if refused is None else _not_sent(user.id, channel, kind, *refused)


async def _outside_window(services: Services, user: User, to: str, text: str, media: UserFile | None,
                          kind: str) -> SendResult:
    """WhatsApp's 24 h window is closed: a template, SMS, or the file kept for their next message."""
    settings = services.settings
    from_ = whatsapp_sender(settings, user)
    sms = bool(user.phone and settings.twilio_sms_from)
    if media is None:
        if settings.twilio_template_sid:
            return await _send_template(services, user.id, to, from_, text, kind)
        if sms:
            log.info("whatsapp window closed: SMS instead", extra={"user_id": user.id})
            return await _send_sms(services, user.id, user.phone or "", text, None, kind)
        log.warning("whatsapp window closed and no template nor SMS", extra={"user_id": user.id})
        return SendResult(channel="whatsapp", skipped="window_closed")
    if sms:
        # A template cannot carry a document; an SMS carries its link, valid for days.
        log.info("whatsapp window closed: file link by SMS", extra={"user_id": user.id})
        result = await _send_sms(services, user.id, user.phone or "", text, media, kind)
        if not result.accepted and not result.queued:
            result.pending_id = await _keep_for_later(services, user.id, media, text, kind)
        return result
    if settings.twilio_template_sid and settings.twilio_template_link_variable:
        result = await _send_template(services, user.id, to, from_, text or short_name(media.name), kind,
                                      link=file_url(settings, media, read_later=True))
        result.file_as_link = result.accepted
        if result.accepted or result.queued:
            return result
        result.pending_id = await _keep_for_later(services, user.id, media, text, kind)
        return result
    pending_id = await _keep_for_later(services, user.id, media, text, kind)
    if pending_id is None:
        return SendResult(channel="whatsapp", skipped="erased")
    if not settings.twilio_template_sid:
        log.warning("whatsapp window closed: file kept for the next message", extra={"user_id": user.id})
        return SendResult(channel="whatsapp", pending_id=pending_id)
    invite = fr_en(user.language,
                   f"📎 Le fichier « {media.name} » est prêt : une réponse à ce message, et il arrive.",
                   f"📎 Your file \"{media.name}\" is ready: reply to this message to receive it.")
    result = await _send_template(services, user.id, to, from_,
                                  f"{text}\n\n{invite}" if text.strip() else invite, kind)
    result.pending_id = pending_id
    return result


def files_waiting(user_id: SQLColumnExpression[int] | int) -> ColumnElement[bool]:
    """The rows of the files kept for the user's next message and not sent yet (the condition
    handlers.waiting_files reads them by, and a message's arrival looks for with EXISTS)."""
    return and_(PendingDelivery.user_id == user_id, PendingDelivery.sent_at.is_(None))


async def _keep_for_later(services: Services, user_id: int, media: UserFile, text: str,
                          kind: str) -> int | None:
    """The file kept for the user's next message; None when the user was erased meanwhile."""
    await commit_turn()
    async with services.sessions() as db:
        if await user_gone(db, user_id):
            return None
        row = PendingDelivery(user_id=user_id, file_id=media.id, text=text, kind=kind[:32],
                              created_at=services.clock())
        db.add(row)
        await db.commit()
        return row.id


async def send_to_number(
    services: Services, number_e164: str, *, text: str, channel: str = "sms", kind: str = "notice"
) -> SendResult:
    """Sends to someone who may not be a user yet (a parent to confirm, the bug-report number).

    A number that belongs to a user who opted out, or whose delivery is blocked, is not sent to."""
    async with services.sessions() as db:
        user = await db.scalar(select(User).where(User.phone == number_e164.removeprefix("whatsapp:")))
    if user is not None and user.opted_out and kind not in OPT_OUT_KINDS:
        return SendResult(channel=channel, skipped="opted_out")
    if services.console is not None:
        return _to_console(services, number_e164, text, None)
    if user is not None and kind not in OPT_OUT_KINDS:
        blocked = await delivery_blocked(services, user.id)
        if blocked is not None:
            return SendResult(channel=channel, skipped="delivery_blocked", detail=blocked)
    user_id = user.id if user is not None else None
    if channel == "whatsapp":
        to = number_e164 if number_e164.startswith("whatsapp:") else f"whatsapp:{number_e164}"
        from_ = whatsapp_sender(services.settings, user)
        if user is None or not in_whatsapp_window(services, user):
            if services.settings.twilio_template_sid:
                return await _send_template(services, user_id, to, from_, text, kind)
            return await _send_sms(services, user_id, number_e164.removeprefix("whatsapp:"), text, None, kind)
        return await _send_whatsapp(services, user_id, to, from_, text, None, kind)
    return await _send_sms(services, user_id, number_e164, text, None, kind)


def whatsapp_messages(text: str, media_url: str | None = None, media_name: str = "",
                      *, captioned: bool = True) -> list[dict[str, Any]]:
    """The WhatsApp messages that carry `text` (Markdown) and at most one file, in order.

    A file goes as ONE message, the text as its caption (each WhatsApp message is billed): when the
    text fits WhatsApp's caption (WHATSAPP_CAPTION_MAX), else the text first in parts of 1,600
    characters and the file after it, captioned with its name. WhatsApp shows no caption on audio
    (`captioned` false: a voice note): the text first, then the audio alone."""
    body = formatting.to_whatsapp(text) if text.strip() else ""
    parts = [{"body": part} for part in formatting.whatsapp_parts(body)] if body else []
    if media_url is None:
        return parts
    if not captioned:
        return [*parts, {"body": "", "media_url": media_url}]
    if body and len(body) <= formatting.WHATSAPP_CAPTION_MAX:
        return [{"body": body, "media_url": media_url}]
    caption = f"📄 {media_name}"[: formatting.WHATSAPP_CAPTION_MAX] if media_name else "📄"
    return [*parts, {"body": caption, "media_url": media_url}]


async def _send_whatsapp(services: Services, user_id: int | None, to: str, from_: str, text: str,
                         media: UserFile | None, kind: str) -> SendResult:
    settings = services.settings
    if media is None:
        messages = whatsapp_messages(text)
    else:
        messages = whatsapp_messages(text, file_url(settings, media), media.name,
                                     captioned=not media.mime.startswith("audio/"))
    return await _send_parts(services, user_id, "whatsapp", to, from_, messages, kind)


async def _send_sms(services: Services, user_id: int | None, phone: str, text: str,
                    media: UserFile | None, kind: str) -> SendResult:
    settings = services.settings
    body = formatting.to_sms(text) if text.strip() else ""
    if media is not None:
        # Read later, maybe days later: the link lasts FILE_LINK_SMS_TTL_S.
        link = f"{formatting.to_gsm7(short_name(media.name))}: {file_url(settings, media, read_later=True)}"
        body = f"{body}\n\n{link}" if body else link
    messages = [{"body": part} for part in formatting.sms_parts(body)]
    result = await _send_parts(services, user_id, "sms", phone, settings.twilio_sms_from, messages, kind)
    result.file_as_link = media is not None and result.accepted
    return result


def _content_message(content: tuple[str, str], text: str) -> dict[str, Any]:
    sid, variables = content
    return {"body": "", "content_sid": sid, "content_variables": variables,
            "record_body": formatting.to_whatsapp(text), "no_outbox": True}


def _template_text(text: str) -> str:
    """A template variable: plain text on one line (Meta refuses new lines, tabs and runs of more
    than four spaces in a parameter), short enough for the 1,024-character total."""
    preview = re.sub(r"\s+", " ", formatting.to_plain(text)).strip()
    if len(preview) > TEMPLATE_VARIABLE_MAX:
        preview = preview[: TEMPLATE_VARIABLE_MAX - 1].rsplit(" ", 1)[0] + "…"
    return preview


async def _send_template(
    services: Services, user_id: int | None, to: str, from_: str, text: str, kind: str, *,
    link: str | None = None,
) -> SendResult:
    settings = services.settings
    preview = _template_text(text)
    variables = {"1": preview}
    if link is not None:
        variables[settings.twilio_template_link_variable] = link
    message = {
        "body": "",
        "content_sid": settings.twilio_template_sid,
        "template": True,
        "content_variables": json.dumps(variables, ensure_ascii=False),
        "record_body": preview if link is None else f"{preview}\n{link}",
    }
    result = await _send_parts(services, user_id, "whatsapp", to, from_, [message], kind)
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
    untold = False
    for index, message in enumerate(messages):
        # Once one part waits in the outbox, the next ones wait behind it (order).
        attempt = await send_one(services, user_id, channel, to, from_, message, kind,
                                 queue_only=result.queued)
        if attempt.erased or attempt.refused is not None:
            refused = _not_sent(user_id, channel, kind, *(attempt.refused or ("erased", None)))
            result.skipped, result.detail = refused.skipped, refused.detail
            break
        untold = untold or attempt.untold
        if attempt.queued:
            result.queued = True
            if attempt.exc is not None:
                result.error, result.error_code = str(attempt.exc), attempt.exc.code
            continue
        exc = attempt.exc
        if exc is not None:
            if isinstance(exc, TwilioNotConfigured):
                result.skipped = "not_configured"
            elif isinstance(exc, SendExpired):
                result.skipped = "expired"  # dropped unsent: queued longer than SEND_MAX_AGE_S
            result.error, result.error_code = str(exc), exc.code
            result.retryable = is_retryable(exc)
            break
        result.sids.append(attempt.sid)
        if index < len(messages) - 1:
            status = await wait_sent(services, attempt.sid, attempt.status)
            if status in FAILED:
                result.error = f"part {index + 1} was not delivered ({status})"
                break
    if untold and result.sids and user_id is not None and not any(m.get("content_sid") for m in messages):
        # Free-form text reaches them on this address now: the place to say what never went out.
        await tell_failures(services, user_id, channel, to, from_)
    return result
