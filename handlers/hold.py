"""While a person of the school holds a child's conversation (bot.safety.hold), the tutor stays quiet:
this handler takes the child's messages, keeps them in the conversation for the person to read on
the flag's page, and tells the child once that a person reads them.

It sits after opt-out (STOP still works) and safety (distress said again still gets the helpline at
once), before anything else: no menu, command or model answers in the person's place. A hold that
lapsed (HUMAN_HOLD_S after the person last wrote) ends here, and the message goes on to the tutor.
"""

from __future__ import annotations

from bot import safety
from bot.agent import history
from bot.channel.context import Incoming


def _content(msg: Incoming) -> str:
    """The message as kept: its text, and a mark for files the person cannot open here."""
    files = len(msg.extra.get("files") or [])
    mark = msg.t(f"[{files} fichier(s) envoyé(s)]", f"[{files} file(s) sent]") if files else ""
    return "\n".join(part for part in (msg.text, mark) if part)


async def handle(msg: Incoming) -> bool:
    services, db = msg.services, msg.db
    now = services.clock()
    flag, msg.extra[safety.GENTLE] = await safety.held_flag(
        db, msg.user.id, now, services.settings.safety.human_hold_s
    )
    if flag is None:
        return False
    conversation_id, inbound_id = msg.conversation.id, msg.inbound.id
    if not await history.user_message_saved(db, conversation_id, inbound_id):  # a retry saves nothing more
        await history.save(db, conversation_id, [{"role": "user", "content": _content(msg)}], inbound_id)
    if flag.hold_told_at is None:
        # Committed first: the send records its row in its own session (SQLite has one writer).
        await db.commit()
        await msg.reply(safety.hold_notice(msg.user.language))  # keyed by the message: once on a retry
        flag.hold_told_at = now
    return True
