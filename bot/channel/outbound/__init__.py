"""Everything the bot sends goes through here: one channel's formatting, parts in order, records.

This is the package's face: callers import from `bot.channel.outbound`, never from a submodule,
and only the names in `__all__`. Its modules import one way, each only those below it:

- `result`: `SendResult`, what one send did, and the advice texts that say it (`explain`).
- `scope`: the running turn's send state (its inbound message, database session and
  idempotency keys), set for a block by `sending(...)` and by nothing else.
- `health`: the opt-out as stored, and delivery health (proactive sends stop after refusals).
- `attempt`: one message: its `outbound_messages` row, Twilio, the record of what happened.
- `send`: `send_to_user`, `send_to_number`: channel, WhatsApp's window, template, SMS, files kept;
  `send_template`: an approved template of the caller's own; `whatsapp_messages`: the messages a
  text and a file go in (one per file, the text as its caption when it fits).
- `outbox`: the background sender, and the final status of the inbound message answered.

The terminal's sink for `python -m bot chat` is bot.channel.console; the files kept for a
user's next message are sent by handlers.waiting_files when they write.
"""

from __future__ import annotations

from bot.channel.outbound.attempt import rehearse_reply, wait_sent
from bot.channel.outbound.health import delivery_blocked, note_status, opted_out_now
from bot.channel.outbound.outbox import deliver_outbox, finish_inbound, run_outbox
from bot.channel.outbound.result import MODEL_ADVICE, USER_ADVICE, SendResult, explain
from bot.channel.outbound.scope import SendKeys, commit_turn, sending, turn_ending
from bot.channel.outbound.send import (
    files_waiting,
    in_whatsapp_window,
    send_template,
    send_to_number,
    send_to_user,
    whatsapp_messages,
)

__all__ = [
    "MODEL_ADVICE",
    "USER_ADVICE",
    "SendKeys",
    "SendResult",
    "commit_turn",
    "deliver_outbox",
    "delivery_blocked",
    "explain",
    "files_waiting",
    "finish_inbound",
    "in_whatsapp_window",
    "note_status",
    "opted_out_now",
    "rehearse_reply",
    "run_outbox",
    "send_template",
    "send_to_number",
    "send_to_user",
    "sending",
    "turn_ending",
    "wait_sent",
    "whatsapp_messages",
]

