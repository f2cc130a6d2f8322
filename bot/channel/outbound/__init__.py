"""Everything the bot sends goes through here: one channel's formatting, parts in order, records.

This is the package's face: callers import from `bot.channel.outbound`, never from a submodule,
and only the names in `__all__`. Its modules import one way, each only those below it:

- `result`: `SendResult`, what one send did, and the advice texts that say it (`explain`).
- `scope`: the running turn's send state (its inbound message, database session and
  idempotency keys).
- `health`: the opt-out as stored, and delivery health (proactive sends stop after refusals).
- `attempt`: one message: its `outbound_messages` row, Twilio, the record of what happened.
- `send`: `send_to_user`, `send_to_number`: channel, WhatsApp's window, template, SMS, files kept.
- `outbox`: the background sender, and the final status of the inbound message answered.

The terminal's sink for `python -m bot chat` is bot.channel.console.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select, update

from bot.channel.outbound.attempt import wait_sent
from bot.channel.outbound.health import delivery_blocked, note_status, opted_out_now
from bot.channel.outbound.outbox import deliver_outbox, inbound_outcome, run_outbox
from bot.channel.outbound.result import MODEL_ADVICE, USER_ADVICE, SendResult, explain
from bot.channel.outbound.scope import SendKeys, commit_turn, current_inbound, current_keys, current_session
from bot.channel.outbound.send import in_whatsapp_window, send_to_number, send_to_user
from bot.storage.models import PendingDelivery, UserFile

if TYPE_CHECKING:
    from bot.channel.context import Incoming

__all__ = [
    "MODEL_ADVICE",
    "USER_ADVICE",
    "SendKeys",
    "SendResult",
    "commit_turn",
    "current_inbound",
    "current_keys",
    "current_session",
    "deliver_outbox",
    "deliver_waiting_files",
    "delivery_blocked",
    "explain",
    "in_whatsapp_window",
    "inbound_outcome",
    "note_status",
    "opted_out_now",
    "run_outbox",
    "send_to_number",
    "send_to_user",
    "wait_sent",
]


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
            await commit_turn()
            async with services.sessions() as db:
                await db.execute(update(PendingDelivery).where(PendingDelivery.id == item.id)
                                 .values(sent_at=services.clock()))
                await db.commit()
    return False
