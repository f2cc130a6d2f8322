"""Everything the bot sends goes through here: one channel's formatting, parts in order, records.

- WhatsApp: Markdown converted to WhatsApp's, parts of at most 1,600 characters, one file per
  message (a signed link Twilio fetches). Outside the 24 h window a free-form message fails
  (63016): an approved template (TWILIO_TEMPLATE_SID) is sent instead, else SMS.
- A file outside the window: by SMS as a link that lasts days (FILE_LINK_SMS_TTL_S), else as the
  template's link variable (TWILIO_TEMPLATE_LINK_VARIABLE), else it waits (PendingDelivery) and
  goes out when the user next writes (`deliver_waiting_files`); a template, when there is one,
  tells them so.
- SMS: plain GSM-7 text in parts of at most two segments; a file becomes a link in the text.
- Twilio does not keep separate messages in order, so the next part leaves only once the
  previous one is reported sent (status callback) or after OUTBOUND_PART_WAIT_S.
- A user who opted out gets nothing, except the confirmation of the opt-out itself.
- Delivery health: after DELIVERY_BLOCK_AFTER permanent failures in a row to a user (error codes
  in PERMANENT_CODES, from the REST call or from a status callback), or one that is the person's
  own refusal (21610, 63014), proactive messages stop: reminders, summaries, sends a tool asks
  for, anything not in DIRECT_KINDS. The reason and time are kept on the user
  (`delivery_blocked_reason`, `delivery_blocked_at`). Direct answers to the message a user just
  sent still go: writing to us proves the number works, and every inbound message resets it.

Every send returns a `SendResult`: `ok` only when Twilio accepted everything asked; otherwise
`reason` says why, `retryable` whether trying again later may work, and `for_model()` /
`explain()` say it to the model and to the user.

The outbox. Every message is an `outbound_messages` row before it leaves. Direct answers
(DIRECT_KINDS) are sent at once, inline; when Twilio does not take one for a reason that may pass
(5xx, 429, refused connection, timeout) the row stays `queued` and the background sender
(`run_outbox`, started with the workers) retries it with exponential backoff (OUTBOX_BACKOFF_S up
to OUTBOX_BACKOFF_MAX_S) until Twilio takes it, refuses it for good (PERMANENT_CODES and any other
4xx: `failed`), or it is older than OUTBOX_MAX_AGE_S. Order per address: while a row to an address
waits, later ones to it are queued behind it, never sent ahead; the sender sends them in id
order, each after the previous one is reported sent (as inline). The result of such a send says
`queued` (reason "queued"): not delivered yet, and the caller must not send it again. Proactive
kinds are not queued: their caller (bot.pipeline.scheduler) retries them with its own backoff and records.
A row in `sending` with no SID for longer than a send can take (a process died in the middle) is
queued again: at least once, not at most once; an ambiguous failure is looked up at Twilio before
it is sent again.
Idempotency: within a turn, the n-th message gets the key "in:<inbound id>:<n>" (`SendKeys`); a
replayed step finds the row of its key and does not send again.
A direct message that failed for good is told to the user with the next message Twilio accepts for
them (`failure_told_at`). The inbound row ends `done` when every answer was accepted, `delivering`
while one waits in the outbox (the sender sets it `done` or `undelivered` later), `undelivered`
when one failed for good (`inbound_outcome`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import re
import sys
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TextIO

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot import logs, metrics
from bot.channel import formatting
from bot.channel.links import file_url, short_name
from bot.channel.twilio_client import SentMessage, TwilioNotConfigured, TwilioSendError
from bot.services import Services
from bot.storage.models import InboundMessage, OutboundMessage, PendingDelivery, User, UserFile

if TYPE_CHECKING:
    from bot.channel.context import Incoming

log = logging.getLogger("bot.channel.outbound")

WHATSAPP_WINDOW = timedelta(hours=24)
TEMPLATE_VARIABLE_MAX = 900  # a template's text plus variables must stay within 1,024 characters
SENT_OR_BETTER = frozenset({"sent", "delivered", "read"})
FAILED = frozenset({"failed", "undelivered"})
# Kinds that reach a user who opted out: only the confirmations of STOP and START.
OPT_OUT_KINDS = frozenset({"optout"})
UNSUBSCRIBED = 21610  # Twilio: the recipient replied STOP to this sender

# The inbound message whose turn is running (set by the pipeline), recorded on every send.
current_inbound: contextvars.ContextVar[int | None] = contextvars.ContextVar("current_inbound", default=None)
# The database session of the running turn (Incoming.db). It is committed before anything is sent:
# what led to a message is durable before the message leaves, and SQLite's single writer is not
# held while we wait on Twilio (our own record of the send needs it).
current_session: contextvars.ContextVar[Any] = contextvars.ContextVar("current_session", default=None)


@dataclass
class SendKeys:
    """Numbers the messages of one turn: the n-th gets the idempotency key "<prefix>:<n>"."""

    prefix: str
    count: int = 0

    def next(self) -> str:
        key = f"{self.prefix}:{self.count}"
        self.count += 1
        return key[:120]


# Set by the pipeline for each turn; without it (a job, the console) sends carry no key.
current_keys: contextvars.ContextVar[SendKeys | None] = contextvars.ContextVar("current_keys", default=None)


@dataclass
class SendResult:
    """What happened to one send. `ok`: Twilio accepted every message asked for, file included."""

    channel: str | None
    sids: list[str] = field(default_factory=list)
    # Nothing was sent: opted_out | delivery_blocked | window_closed | no_address | not_configured | empty
    skipped: str | None = None
    error: str | None = None
    error_code: int | None = None  # Twilio's error code, when it gave one
    retryable: bool = False  # the failure may pass (Twilio unreachable, rate limited, ambiguous)
    template: bool = False
    file_as_link: bool = False  # the file went as a link in the text (SMS, template variable)
    pending_id: int | None = None  # the file waits for the user's next message (PendingDelivery)
    detail: str | None = None  # e.g. the delivery-blocked reason
    queued: bool = False  # some parts wait in the outbox: sent later, automatically; do not resend

    @property
    def accepted(self) -> bool:
        """Twilio accepted every message that was sent (a waiting file aside)."""
        return self.skipped is None and self.error is None and bool(self.sids) and not self.queued

    @property
    def ok(self) -> bool:
        return self.accepted and self.pending_id is None

    @property
    def reason(self) -> str | None:
        """None when ok; else skipped's value, file_waiting, refused, failed or unavailable."""
        if self.ok:
            return None
        if self.skipped:
            return self.skipped
        if self.queued:
            return "queued"
        if self.error is None:
            return "file_waiting" if self.pending_id is not None else "unavailable"
        if self.retryable:
            return "unavailable"
        return "refused" if self.error_code is not None else "failed"

    @property
    def permanent(self) -> bool:
        """Trying the same send again will not help (the scheduler gives up at once). A queued
        send is not permanent: the outbox sends it."""
        return not self.ok and not self.retryable and not self.queued

    def for_model(self) -> dict[str, Any]:
        """The tool result's view: {"delivered": …, "reason": …, "what_user_can_do": …}."""
        out: dict[str, Any] = {"delivered": self.ok, "channel": self.channel}
        if self.template:
            out["template"] = True
        if self.file_as_link:
            out["file_sent_as"] = "link"
        reason = self.reason
        if reason is None:
            return out
        out["reason"] = reason
        if self.error or self.detail:
            out["detail"] = (self.detail or self.error or "")[:300]
        if self.pending_id is not None:
            out["file_waiting_for_next_message"] = True
        out["what_user_can_do"] = MODEL_ADVICE.get(reason, MODEL_ADVICE["failed"])
        return out


# What the model is told the user can do, per reason (the model says it in the user's language).
MODEL_ADVICE = {
    "opted_out": "Nothing was sent: the user opted out (STOP). They can send START to get messages again.",
    "delivery_blocked": (
        "Nothing was sent: messages to this number were refused several times in a row (see detail). "
        "The user can check their number; answers here in the chat still reach them."),
    "window_closed": (
        "Nothing was sent: WhatsApp allows messages only within 24 h of the user's last WhatsApp message, "
        "and no template or SMS sender is set up. They can write on WhatsApp, then ask again."),
    "no_address": "Nothing was sent: there is no number for this user on that channel. Give it here instead.",
    "not_configured": (
        "Nothing was sent: this channel is not set up on this service. Give the content here, in the "
        "conversation, instead."),
    "empty": "Nothing was sent: the message was empty.",
    "file_waiting": (
        "The file did not go yet (WhatsApp's 24 h window is closed); it is kept and is sent automatically "
        "as soon as the user writes any message. Tell them so."),
    "refused": (
        "Nothing was sent: the messaging provider refused it (see detail). The user can check the number, "
        "or get the content here in the conversation."),
    "failed": "The message could not be delivered (see detail). The user can get the content here instead.",
    "unavailable": "Nothing was sent: the messaging service did not answer. Try again in a few minutes.",
    "queued": (
        "Not delivered yet: the messaging service did not take it right now. It is kept and sent "
        "automatically as soon as the service answers; do not send it again."),
}

# The same for a person reading it (handlers tell the user directly): French, then English.
USER_ADVICE = {
    "opted_out": ("Rien n'a été envoyé : tu as demandé à ne plus recevoir de messages. Écris START pour "
                  "les recevoir de nouveau.",
                  "Nothing was sent: you asked to receive no more messages. Send START to get them again."),
    "delivery_blocked": ("Rien n'a été envoyé : les derniers messages vers ce numéro ont été refusés. "
                         "Vérifie le numéro ; ici, dans notre conversation, mes réponses t'arrivent.",
                         "Nothing was sent: the last messages to this number were refused. Check the "
                         "number; here, in our chat, my answers still reach you."),
    "window_closed": ("Rien n'a été envoyé sur WhatsApp : tu ne m'y as pas écrit depuis plus de 24 h. "
                      "Écris-moi sur WhatsApp, puis redemande-le.",
                      "Nothing was sent on WhatsApp: you have not written to me there for over 24 h. "
                      "Write to me on WhatsApp, then ask again."),
    "no_address": ("Rien n'a été envoyé : je n'ai pas de numéro pour ce canal. Je peux te le donner ici.",
                   "Nothing was sent: I have no number for that channel. I can give it to you here."),
    "not_configured": ("Rien n'a été envoyé : ce moyen d'envoi n'est pas disponible sur ce service. "
                       "Je peux te le donner ici, dans notre conversation.",
                       "Nothing was sent: that way of sending is not available on this service. "
                       "I can give it to you here, in our chat."),
    "empty": ("Il n'y avait rien à envoyer.", "There was nothing to send."),
    "file_waiting": ("Ton fichier n'a pas pu partir tout de suite : il t'attend. Écris-moi n'importe quel "
                     "message et je te l'envoie aussitôt.",
                     "Your file could not go right away: it is waiting for you. Send me any message and "
                     "I will send it at once."),
    "refused": ("Le message n'a pas été envoyé : l'opérateur l'a refusé. Vérifie le numéro, ou "
                "demande-le-moi ici.",
                "The message was not sent: the carrier refused it. Check the number, or ask me for it here."),
    "failed": ("Le message n'a pas pu être remis. Je peux te le donner ici, dans notre conversation.",
               "The message could not be delivered. I can give it to you here, in our chat."),
    "unavailable": ("Le service d'envoi ne répond pas : rien n'est parti. Réessaie dans quelques minutes.",
                    "The messaging service is not answering: nothing was sent. Try again in a few minutes."),
    "queued": ("Le message n'est pas encore parti : le service d'envoi ne répond pas. Il partira tout "
               "seul dès que possible.",
               "The message has not gone yet: the messaging service is not answering. It will go by "
               "itself as soon as possible."),
}


def explain(result: SendResult, language: str = "fr") -> str:
    """A plain sentence for the user: what did not happen and what they can do ("" when ok)."""
    reason = result.reason
    if reason is None:
        return ""
    fr, en = USER_ADVICE.get(reason, USER_ADVICE["failed"])
    return en if language == "en" else fr


# Twilio error codes meaning this number cannot be reached this way, however often we retry.
PERMANENT_CODES: dict[int, str] = {
    21211: "invalid number",
    21610: "unsubscribed (STOP to the carrier)",
    21612: "not reachable from this sender",
    21614: "not a mobile number",
    30005: "unknown or inactive handset",
    30006: "landline or unreachable carrier",
    63003: "inactive or invalid WhatsApp address",
    63014: "the person blocked the sender",
    63024: "not a WhatsApp user",
}
# The person's own refusal: one is enough.
BLOCK_AT_ONCE = frozenset({21610, 63014})
# Kinds that answer the message a user just sent; every other kind is proactive (delivery health).
DIRECT_KINDS = frozenset({"reply", "tool", "progress", "notice", "system", "optout", "pending_file"})
# Direct kinds whose failure for good the user is told of with their next delivered message.
TOLD_KINDS = frozenset({"reply", "tool", "progress", "system", "pending_file"})
OUTBOX_WAITING = ("queued", "sending")


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


def _t(user: User | None, fr: str, en: str) -> str:
    return en if user is not None and user.language == "en" else fr


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
    if kind not in OPT_OUT_KINDS:
        refused = await _stored_refusal(services, user.id, proactive=kind not in DIRECT_KINDS)
        if refused is not None:
            skipped, reason = refused
            what = "user opted out meanwhile" if skipped == "opted_out" else "delivery blocked"
            log.info(f"not sent: {what}", extra={"user_id": user.id, "kind": kind, "reason": reason})
            return SendResult(channel=channel, skipped=skipped, detail=reason)
    if channel == "whatsapp":
        to = _whatsapp_address(user)
        if to is None:
            return SendResult(channel=channel, skipped="no_address")
        if in_whatsapp_window(services, user):
            return await _send_whatsapp(services, user.id, to, text, media, kind)
        return await _outside_window(services, user, to, text, media, kind)
    if not user.phone:
        return SendResult(channel="sms", skipped="no_address")
    return await _send_sms(services, user.id, user.phone, text, media, kind)


async def _outside_window(services: Services, user: User, to: str, text: str, media: UserFile | None,
                          kind: str) -> SendResult:
    """WhatsApp's 24 h window is closed: a template, SMS, or the file kept for their next message."""
    settings = services.settings
    sms = bool(user.phone and settings.twilio_sms_from)
    if media is None:
        if settings.twilio_template_sid:
            return await _send_template(services, user.id, to, text, kind)
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
        result = await _send_template(services, user.id, to, text or short_name(media.name), kind,
                                      link=file_url(settings, media, read_later=True))
        result.file_as_link = result.accepted
        if result.accepted or result.queued:
            return result
        result.pending_id = await _keep_for_later(services, user.id, media, text, kind)
        return result
    pending_id = await _keep_for_later(services, user.id, media, text, kind)
    if not settings.twilio_template_sid:
        log.warning("whatsapp window closed: file kept for the next message", extra={"user_id": user.id})
        return SendResult(channel="whatsapp", pending_id=pending_id)
    invite = _t(user, f"📎 Ton fichier « {media.name} » est prêt : réponds à ce message pour le recevoir.",
                f"📎 Your file \"{media.name}\" is ready: reply to this message to receive it.")
    result = await _send_template(services, user.id, to, f"{text}\n\n{invite}" if text.strip() else invite,
                                  kind)
    result.pending_id = pending_id
    return result


async def _keep_for_later(services: Services, user_id: int, media: UserFile, text: str, kind: str) -> int:
    await _commit_turn()
    async with services.sessions() as db:
        row = PendingDelivery(user_id=user_id, file_id=media.id, text=text, kind=kind[:32],
                              created_at=services.clock())
        db.add(row)
        await db.commit()
        return row.id


async def deliver_waiting_files(msg: Incoming) -> bool:
    """Handler: the files that waited for this user's next message go out now, before the answer.

    Never takes the message (returns False): it goes on to the other handlers."""
    services, user = msg.services, msg.user
    async with services.sessions() as db:
        waiting = list((await db.scalars(
            select(PendingDelivery)
            .where(PendingDelivery.user_id == user.id, PendingDelivery.sent_at.is_(None))
            .order_by(PendingDelivery.id)
        )).all())
        files = {f.id: f for f in (await db.scalars(
            select(UserFile).where(UserFile.id.in_([w.file_id for w in waiting]))
        )).all()} if waiting else {}
    for item in waiting:
        media = files.get(item.file_id)
        sent = True
        if media is not None:
            intro = msg.t("📎 Voici le fichier qui t'attendait.",
                          "📎 Here is the file that was waiting for you.")
            text = f"{intro}\n\n{item.text}" if item.text.strip() else intro
            result = await send_to_user(services, user, text=text, media=media, channel=msg.channel,
                                        kind="pending_file")
            sent = result.ok or result.queued  # queued: the outbox sends it, not the next message
        if sent:
            await _commit_turn()
            async with services.sessions() as db:
                await db.execute(update(PendingDelivery).where(PendingDelivery.id == item.id)
                                 .values(sent_at=services.clock()))
                await db.commit()
    return False


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
        return await _to_console(services, number_e164, text, None)
    if user is not None and kind not in OPT_OUT_KINDS:
        blocked = await delivery_blocked(services, user.id)
        if blocked is not None:
            return SendResult(channel=channel, skipped="delivery_blocked", detail=blocked)
    user_id = user.id if user is not None else None
    if channel == "whatsapp":
        to = number_e164 if number_e164.startswith("whatsapp:") else f"whatsapp:{number_e164}"
        if user is None or not in_whatsapp_window(services, user):
            if services.settings.twilio_template_sid:
                return await _send_template(services, user_id, to, text, kind)
            return await _send_sms(services, user_id, number_e164.removeprefix("whatsapp:"), text, None, kind)
        return await _send_whatsapp(services, user_id, to, text, None, kind)
    return await _send_sms(services, user_id, number_e164, text, None, kind)


# --- delivery health -------------------------------------------------------------------------


async def opted_out_now(services: Services, user_id: int | None) -> bool:
    """The flag as stored now, not as the caller loaded it: a STOP the webhook applied while a long
    turn ran stops that turn's sends at once."""
    if user_id is None:
        return False
    async with services.sessions() as db:
        return bool(await db.scalar(select(User.opted_out).where(User.id == user_id)))


async def _stored_refusal(services: Services, user_id: int | None, *,
                          proactive: bool) -> tuple[str, str | None] | None:
    """Why a send to this user must not go, from the user's row as stored now, not as the caller
    loaded it (one read): they opted out meanwhile (a STOP the webhook applied while a long turn
    ran), or, for a proactive send, their delivery is blocked (`delivery_blocked`). A user with no
    id (just erased, their farewell being sent) has no row to read."""
    if user_id is None:
        return None
    async with services.sessions() as db:
        user = await db.get(User, user_id)
        if user is None:
            return None
        if user.opted_out:
            return "opted_out", None
        reason = await _blocked_reason(services, db, user) if proactive else None
        return ("delivery_blocked", reason) if reason is not None else None


async def delivery_blocked(services: Services, user_id: int) -> str | None:
    """Why proactive messages to this user are stopped, or None."""
    async with services.sessions() as db:
        user = await db.get(User, user_id)
        return None if user is None else await _blocked_reason(services, db, user)


async def _blocked_reason(services: Services, db: AsyncSession, user: User) -> str | None:
    """Judged from the user's latest sends when failures were recorded since they last wrote or got
    a message delivered."""
    if user.delivery_blocked_at is None and user.delivery_failures:
        await _commit_turn()
        await judge_delivery_health(services, db, user)
        await db.commit()
    return user.delivery_blocked_reason if user.delivery_blocked_at is not None else None


async def judge_delivery_health(services: Services, db: AsyncSession, user: User) -> None:
    """Blocks proactive sends to `user` after repeated permanent failures since they last wrote.

    The failures are read from the sends themselves, whatever recorded them: the REST call's
    refusal or a status callback's ErrorCode."""
    query = select(OutboundMessage.status, OutboundMessage.error_code, OutboundMessage.channel).where(
        OutboundMessage.user_id == user.id)
    if user.last_inbound_at is not None:
        query = query.where(OutboundMessage.created_at >= user.last_inbound_at)
    threshold = services.settings.delivery_block_after
    rows = (await db.execute(query.order_by(OutboundMessage.id.desc()).limit(threshold))).all()
    streak: list[tuple[int, str]] = []
    for status, error_code, channel in rows:
        code = int(error_code) if error_code and error_code.isdigit() else None
        if status not in FAILED or code not in PERMANENT_CODES:
            break
        streak.append((code, channel))
    if not streak or (len(streak) < threshold and not any(c in BLOCK_AT_ONCE for c, _ in streak)):
        return
    code, channel = next(((c, ch) for c, ch in streak if c in BLOCK_AT_ONCE), streak[0])
    user.delivery_blocked_reason = f"{code} {channel}: {PERMANENT_CODES[code]}"[:160]
    user.delivery_blocked_at = services.clock()
    log.warning("proactive messages stopped",
                extra={"user_id": user.id, "reason": user.delivery_blocked_reason, "failures": len(streak)})


async def note_status(services: Services, db: AsyncSession, row: OutboundMessage, status: str) -> None:
    """For the status callback: a failure counts towards the user's delivery health, a delivery
    clears it. `row.error_code` is already set from the callback's ErrorCode."""
    if row.user_id is None:
        return
    user = await db.get(User, row.user_id)
    if user is None:
        return
    if status in FAILED:
        user.delivery_failures = (user.delivery_failures or 0) + 1
        await db.flush()
        if user.delivery_blocked_at is None:
            await judge_delivery_health(services, db, user)
    elif status in ("delivered", "read") and user.delivery_failures:
        user.delivery_failures = 0


# --- channels --------------------------------------------------------------------------------


async def _to_console(services: Services, to: str, text: str, media: UserFile | None) -> SendResult:
    sink = services.console or ConsoleSink()
    path = None
    if media is not None:
        local = services.files.local_path(media.storage_key)
        path = str(local) if local is not None else file_url(services.settings, media, read_later=True)
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
        # Read later, maybe days later: the link lasts FILE_LINK_SMS_TTL_S.
        link = f"{formatting.to_gsm7(short_name(media.name))}: {file_url(settings, media, read_later=True)}"
        body = f"{body}\n\n{link}" if body else link
    messages = [{"body": part} for part in formatting.sms_parts(body)]
    result = await _send_parts(services, user_id, "sms", phone, settings.twilio_sms_from, messages, kind)
    result.file_as_link = media is not None and result.accepted
    return result


def _template_text(text: str) -> str:
    """A template variable: plain text on one line (Meta refuses new lines, tabs and runs of more
    than four spaces in a parameter), short enough for the 1,024-character total."""
    preview = re.sub(r"\s+", " ", formatting.to_plain(text)).strip()
    if len(preview) > TEMPLATE_VARIABLE_MAX:
        preview = preview[: TEMPLATE_VARIABLE_MAX - 1].rsplit(" ", 1)[0] + "…"
    return preview


async def _send_template(
    services: Services, user_id: int | None, to: str, text: str, kind: str, *, link: str | None = None
) -> SendResult:
    settings = services.settings
    preview = _template_text(text)
    variables = {"1": preview}
    if link is not None:
        variables[settings.twilio_template_link_variable] = link
    message = {
        "body": "",
        "content_sid": settings.twilio_template_sid,
        "content_variables": json.dumps(variables, ensure_ascii=False),
        "record_body": preview if link is None else f"{preview}\n{link}",
    }
    result = await _send_parts(services, user_id, "whatsapp", to, settings.twilio_whatsapp_from,
                               [message], kind)
    result.template = True
    return result


def is_retryable(exc: TwilioSendError) -> bool:
    """Worth another try later: Twilio unreachable, rate limited, a 5xx, or an ambiguous end."""
    if isinstance(exc, TwilioNotConfigured):
        return False
    return exc.ambiguous or exc.code == 20429 or exc.status is None or exc.status == 429 or exc.status >= 500


@dataclass
class _Attempt:
    sid: str = ""
    status: str = ""
    exc: TwilioSendError | None = None
    queued: bool = False  # the row waits in the outbox


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
        # Once one part waits in the outbox, the next ones wait behind it (order).
        attempt = await _send_one(services, user_id, channel, to, from_, message, kind,
                                  queue_only=result.queued)
        if attempt.queued:
            result.queued = True
            if attempt.exc is not None:
                result.error, result.error_code = str(attempt.exc), attempt.exc.code
            continue
        exc = attempt.exc
        if exc is not None:
            if isinstance(exc, TwilioNotConfigured):
                result.skipped = "not_configured"
            result.error, result.error_code = str(exc), exc.code
            result.retryable = is_retryable(exc)
            break
        result.sids.append(attempt.sid)
        if index < len(messages) - 1:
            status = await _wait_sent(services, attempt.sid, attempt.status)
            if status in FAILED:
                result.error = f"part {index + 1} was not delivered ({status})"
                break
    if result.sids and user_id is not None and not any(m.get("content_sid") for m in messages):
        # Free-form text reaches them on this address now: the place to say what never went out.
        await tell_failures(services, user_id, channel, to, from_)
    return result


def _fields(services: Services, to: str, from_: str, message: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {"to": to, "from_": from_,
                              "status_callback": services.settings.public_base_url + "/twilio/status"}
    if message.get("body"):
        fields["body"] = message["body"]
    if message.get("media_url"):
        fields["media_url"] = [message["media_url"]]
    if message.get("content_sid"):
        fields["content_sid"] = message["content_sid"]
        fields["content_variables"] = message["content_variables"]
    return fields


def _replayed(row: OutboundMessage) -> _Attempt:
    """The attempt of a message already recorded under the same idempotency key."""
    log.info("message already recorded, not sent again", extra={"key": row.idempotency_key, "sid": row.sid})
    if row.sid:
        return _Attempt(sid=row.sid, status=row.status)
    if row.status in OUTBOX_WAITING:
        return _Attempt(queued=True)
    code = int(row.error_code) if row.error_code and row.error_code.isdigit() else None
    return _Attempt(exc=TwilioSendError(row.last_error or "not sent", code=code))


async def _backlog(db: AsyncSession, to: str, before_id: int) -> bool:
    """Whether an earlier message to `to` has not left yet (this one must wait behind it)."""
    found = await db.scalar(
        select(OutboundMessage.id)
        .where(OutboundMessage.to_addr == to, OutboundMessage.sid.is_(None),
               OutboundMessage.status.in_(OUTBOX_WAITING), OutboundMessage.id < before_id)
        .limit(1))
    return found is not None


async def _send_one(services: Services, user_id: int | None, channel: str, to: str, from_: str,
                    message: dict[str, Any], kind: str, *, queue_only: bool = False) -> _Attempt:
    body = message.get("body", "")
    fields = _fields(services, to, from_, message)
    keys = current_keys.get()
    key = keys.next() if keys is not None else None
    outbox = kind in DIRECT_KINDS
    await _commit_turn()
    async with services.sessions() as db:
        if key is not None:
            existing = await db.scalar(select(OutboundMessage).where(OutboundMessage.idempotency_key == key))
            if existing is not None:
                return _replayed(existing)
        now = services.clock()
        row = OutboundMessage(
            user_id=user_id, channel=channel, to_addr=to, body=message.get("record_body", body),
            media_url=message.get("media_url"), kind=kind, status="sending",
            segments=formatting.sms_segments(body)[1] if channel == "sms" else None,
            inbound_id=current_inbound.get(), created_at=now, updated_at=now,
            idempotency_key=key, payload=fields, attempts=0,
        )
        db.add(row)
        await db.flush()
        if outbox and (queue_only or await _backlog(db, to, row.id)):
            row.status, row.next_attempt_at = "queued", now
            await db.commit()
            metrics.OUTBOUND.labels(channel, "queued").inc()
            return _Attempt(queued=True)
        await db.commit()
        try:
            sent = await services.twilio.create_message(fields)
        except asyncio.CancelledError:
            # Stopped while Twilio had it: whether it went is unknown. Recorded so, it holds no later
            # message back (the turn's recovery tells the user their answer was interrupted).
            await _interrupted(services, row.id, "unknown")
            raise
        except TwilioSendError as exc:
            if outbox and is_retryable(exc):
                await _retry_later(services, db, row, exc)
                return _Attempt(exc=exc, queued=True)
            await _record_failure(services, db, row, channel, exc)
            if kind not in TOLD_KINDS or kind == "tool":
                # The caller has the result (a tool's result tells the model): nothing to tell later.
                row.failure_told_at = services.clock()
                await db.commit()
            return _Attempt(exc=exc)
        await _store_sent(services, row, sent)
    metrics.OUTBOUND.labels(channel, "sent").inc()
    return _Attempt(sid=sent.sid, status=sent.status)


async def _interrupted(services: Services, row_id: int, status: str) -> None:
    """Records a send cut short by cancellation (shielded: the update itself is not cut)."""

    async def record() -> None:
        async with services.sessions() as db:
            await db.execute(
                update(OutboundMessage)
                .where(OutboundMessage.id == row_id, OutboundMessage.sid.is_(None),
                       OutboundMessage.status == "sending")
                .values(status=status, last_error="ambiguous: interrupted while sending",
                        next_attempt_at=services.clock() if status == "queued" else None,
                        updated_at=services.clock()))
            await db.commit()

    with contextlib.suppress(Exception):
        await asyncio.shield(record())


async def _store_sent(services: Services, row: OutboundMessage, sent: SentMessage) -> None:
    """Records Twilio's SID in a session of its own, shielded: a stop right after Twilio took the
    message must not leave it looking unsent (it would be sent again, or hold later ones back)."""

    async def store() -> None:
        async with services.sessions() as db:
            stored = await db.get(OutboundMessage, row.id)
            if stored is not None:
                _record_sent(services, stored, sent)
                await db.commit()

    _record_sent(services, row, sent)  # the caller's copy, for what it does next
    metrics.TWILIO_SENDS.labels(row.channel, "accepted", "none").inc()
    await asyncio.shield(store())


def _record_sent(services: Services, row: OutboundMessage, sent: SentMessage) -> None:
    row.sid = sent.sid
    row.attempts = (row.attempts or 0) + 1
    row.next_attempt_at = None
    row.payload = None  # only needed to send it; it holds the address an erasure masks
    # A status callback may already have arrived and been recorded: keep the further one.
    if row.status in OUTBOX_WAITING:
        row.status = sent.status
    row.updated_at = services.clock()


def _backoff(services: Services, attempts: int) -> timedelta:
    settings = services.settings
    delay = min(settings.outbox_backoff_max_s, settings.outbox_backoff_s * 2 ** max(0, attempts - 1))
    return timedelta(seconds=delay)


async def _retry_later(services: Services, db: AsyncSession, row: OutboundMessage,
                       exc: TwilioSendError) -> None:
    """Back to the outbox: tried again after a backoff that doubles with each attempt."""
    row.attempts = (row.attempts or 0) + 1
    row.status = "queued"
    row.error_code = str(exc.code or exc.status or "")[:16] or None
    # "ambiguous": Twilio may have it; the sender looks it up before sending again.
    row.last_error = ("ambiguous: " if exc.ambiguous else "") + str(exc)[:1900]
    row.next_attempt_at = services.clock() + _backoff(services, row.attempts)
    row.updated_at = services.clock()
    await db.commit()
    metrics.OUTBOUND.labels(row.channel, "retry").inc()
    metrics.TWILIO_SENDS.labels(row.channel, "retry", metrics.error_code(exc.code, exc.status)).inc()
    log.warning("send postponed to the outbox",
                extra={"outbound_id": row.id, "attempts": row.attempts, "code": exc.code,
                       "http_status": exc.status, "error": str(exc)[:300]})


async def _commit_turn() -> None:
    """Commits the running turn's session before we write in our own: SQLite has one writer."""
    turn_db = current_session.get()
    if turn_db is not None and turn_db.in_transaction():
        await turn_db.commit()


async def _record_failure(services: Services, db: AsyncSession, row: OutboundMessage, channel: str,
                          exc: TwilioSendError) -> None:
    row.attempts = (row.attempts or 0) + 1
    row.last_error = str(exc)[:2000]
    row.next_attempt_at, row.payload = None, None
    if isinstance(exc, TwilioNotConfigured):
        row.status, row.updated_at = "failed", services.clock()
        await db.commit()
        metrics.OUTBOUND.labels(channel, "not_configured").inc()
        metrics.TWILIO_SENDS.labels(channel, "not_configured", "none").inc()
        log.error("twilio is not configured", extra={"error": str(exc)})
        return
    row.status = "unknown" if exc.ambiguous else "failed"
    row.error_code = str(exc.code or exc.status or "")[:16] or None
    row.updated_at = services.clock()
    await db.commit()
    metrics.OUTBOUND.labels(channel, row.status).inc()
    metrics.TWILIO_SENDS.labels(channel, row.status, metrics.error_code(exc.code, exc.status)).inc()
    if row.user_id is not None and exc.code in PERMANENT_CODES:
        # Refused for good (the carrier has the person's STOP, the number is no mobile…): it
        # counts towards stopping proactive messages to them.
        user = await db.get(User, row.user_id)
        if user is not None:
            user.delivery_failures = (user.delivery_failures or 0) + 1
            await db.flush()
            if user.delivery_blocked_at is None:
                await judge_delivery_health(services, db, user)
            await db.commit()
    log.error("send failed", extra={"channel": channel, "code": exc.code, "http_status": exc.status,
                                    "ambiguous": exc.ambiguous, "error": str(exc)})


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


# --- the outbox ------------------------------------------------------------------------------

TOLD = ("⚠️ Un de mes messages précédents n'a pas pu t'être remis : {items}. Redemande-le-moi si besoin.",
        "⚠️ One of my previous messages could not be delivered to you: {items}. Ask me again if needed.")
OUTBOX_LOCK = "lock:outbox"


def _preview(body: str, limit: int = 60) -> str:
    text = re.sub(r"\s+", " ", formatting.to_plain(body or "")).strip() or "📎"
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


async def tell_failures(services: Services, user_id: int, channel: str, to: str, from_: str) -> None:
    """Tells the user which direct messages never went out, on an address that just worked."""
    try:
        async with services.sessions() as db:
            rows = list((await db.scalars(
                select(OutboundMessage)
                .where(OutboundMessage.user_id == user_id, OutboundMessage.sid.is_(None),
                       OutboundMessage.status == "failed", OutboundMessage.failure_told_at.is_(None),
                       OutboundMessage.kind.in_(TOLD_KINDS))
                .order_by(OutboundMessage.id).limit(20))).all())
            user = await db.get(User, user_id) if rows else None
        if not rows or user is None:
            return
        items = " ; ".join(f"« {_preview(r.body)} »" for r in rows[:3])
        if len(rows) > 3:
            items += f" (+{len(rows) - 3})"
        text = _t(user, *TOLD).format(items=items)
        body = (formatting.whatsapp_parts(formatting.to_whatsapp(text)) if channel == "whatsapp"
                else formatting.sms_parts(formatting.to_sms(text)))[0]
        token = current_keys.set(SendKeys(f"told:{rows[0].id}"))
        try:
            attempt = await _send_one(services, user_id, channel, to, from_, {"body": body}, "notice")
        finally:
            current_keys.reset(token)
        if attempt.sid or attempt.queued:
            async with services.sessions() as db:
                await db.execute(update(OutboundMessage)
                                 .where(OutboundMessage.id.in_([r.id for r in rows]))
                                 .values(failure_told_at=services.clock()))
                await db.commit()
    except Exception:
        log.exception("could not tell the user of a failed message", extra={"user_id": user_id})


async def inbound_outcome(db: AsyncSession, inbound_id: int) -> str:
    """The status of a handled inbound message, from its answers: done, delivering or undelivered."""
    rows = (await db.execute(
        select(OutboundMessage.status, OutboundMessage.kind)
        .where(OutboundMessage.inbound_id == inbound_id, OutboundMessage.sid.is_(None)))).all()
    if any(status in OUTBOX_WAITING for status, _ in rows):
        return "delivering"
    if any(status == "failed" and kind in TOLD_KINDS for status, kind in rows):
        return "undelivered"
    return "done"


async def _settle_inbound(services: Services, inbound_ids: set[int]) -> None:
    """Inbound rows that waited for the outbox get their final status."""
    if not inbound_ids:
        return
    async with services.sessions() as db:
        for row in (await db.scalars(select(InboundMessage).where(
                InboundMessage.id.in_(inbound_ids), InboundMessage.status == "delivering"))).all():
            outcome = await inbound_outcome(db, row.id)
            if outcome != "delivering":
                row.status = outcome
        await db.commit()


async def run_outbox(services: Services, stopping: asyncio.Event) -> None:
    """The background sender: one round every OUTBOX_POLL_S, in one process at a time."""
    interval = services.settings.outbox_poll_s
    while not stopping.is_set():
        try:
            token = await services.state.acquire(OUTBOX_LOCK, max(300.0, interval * 10))
            if token is not None:
                try:
                    await deliver_outbox(services)
                finally:
                    await services.state.release(OUTBOX_LOCK, token)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("outbox round failed")  # database or state away: the next round tries again
        try:
            await asyncio.wait_for(stopping.wait(), interval)
        except TimeoutError:
            pass


async def deliver_outbox(services: Services) -> int:
    """Sends what is due in the outbox, address by address in id order; returns how many Twilio took."""
    await _requeue_stale(services)
    now = services.clock()
    async with services.sessions() as db:
        rows = (await db.execute(
            select(OutboundMessage.id, OutboundMessage.to_addr, OutboundMessage.status,
                   OutboundMessage.next_attempt_at)
            .where(OutboundMessage.sid.is_(None), OutboundMessage.status.in_(OUTBOX_WAITING))
            .order_by(OutboundMessage.id))).all()
    waiting: dict[str, list[int]] = {}
    due: set[str] = set()
    for row_id, to, status, at in rows:
        if to not in waiting:
            waiting[to] = []
            # The oldest row of an address decides: one still being sent holds the others back.
            if status == "queued" and (at is None or at <= now):
                due.add(to)
        waiting[to].append(row_id)
    sent = 0
    for to in due:
        sent += await _drain(services, waiting[to])
    return sent


async def _drain(services: Services, row_ids: list[int]) -> int:
    """Sends one address's waiting rows in order; stops at the first that must wait again."""
    sent, told, inbound_ids = 0, None, set()
    for index, row_id in enumerate(row_ids):
        with logs.scope():  # each row's lines carry its own message's id (bound in _send_queued)
            outcome, row, fields = await _send_queued(services, row_id)
        if row is None:
            break  # taken by someone else: its order is theirs now
        if row.inbound_id is not None:
            inbound_ids.add(row.inbound_id)
        if outcome == "retry":
            break
        if outcome == "sent":
            sent += 1
            if row.user_id is not None and not fields.get("content_sid"):
                told = (row.user_id, row.channel, str(fields.get("to", "")), str(fields.get("from_", "")))
            if index < len(row_ids) - 1:
                await _wait_sent(services, row.sid or "", row.status)
    if told is not None:
        await tell_failures(services, *told)
    await _settle_inbound(services, inbound_ids)
    return sent


async def _send_queued(services: Services, row_id: int
                       ) -> tuple[str, OutboundMessage | None, dict[str, Any]]:
    """Claims and sends one outbox row: ("sent" | "retry" | "failed", row, its fields), or "gone"."""
    now = services.clock()
    async with services.sessions() as db:
        claimed = await db.execute(
            update(OutboundMessage)
            .where(OutboundMessage.id == row_id, OutboundMessage.status == "queued",
                   OutboundMessage.sid.is_(None))
            .values(status="sending", updated_at=now))
        await db.commit()
        if claimed.rowcount != 1:
            return "gone", None, {}
        row = await db.get(OutboundMessage, row_id)
        assert row is not None
        logs.bind(inbound_id=row.inbound_id, outbound_id=row.id)
        fields = dict(row.payload or {})
        age = (now - row.created_at).total_seconds() if row.created_at else 0.0
        if not fields or age > services.settings.outbox_max_age_s:
            why = "nothing to send" if not fields else f"not taken by Twilio within {age:.0f} s"
            await _record_failure(services, db, row, row.channel, TwilioSendError(why))
            return "failed", row, fields
        try:
            found = None
            if (row.last_error or "").startswith("ambiguous"):
                found = await services.twilio.find_sent(fields, row.created_at)
            sent = found or await services.twilio.create_message(fields)
        except asyncio.CancelledError:
            await _interrupted(services, row.id, "queued")  # looked up, then sent, by the next round
            raise
        except TwilioSendError as exc:
            if is_retryable(exc):
                await _retry_later(services, db, row, exc)
                return "retry", row, fields
            await _record_failure(services, db, row, row.channel, exc)
            return "failed", row, fields
        await _store_sent(services, row, sent)
        metrics.OUTBOUND.labels(row.channel, "sent").inc()
        log.info("outbox message sent", extra={"outbound_id": row.id, "attempts": row.attempts})
        return "sent", row, fields


async def _requeue_stale(services: Services) -> None:
    """A row left `sending` without SID by a process that died: queued again, looked up first."""
    settings = services.settings
    stale = settings.twilio_timeout_s * (settings.twilio_send_attempts + 1) + 60.0
    async with services.sessions() as db:
        await db.execute(
            update(OutboundMessage)
            .where(OutboundMessage.sid.is_(None), OutboundMessage.status == "sending",
                   OutboundMessage.kind.in_(DIRECT_KINDS),
                   OutboundMessage.updated_at < services.clock() - timedelta(seconds=stale))
            .values(status="queued", next_attempt_at=services.clock(),
                    last_error="ambiguous: interrupted while sending"))
        await db.commit()
