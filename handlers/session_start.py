"""The first message of a session (bot.learning.sessions) when questions are due for
review: answered by the agent turn as any other, and one line after the answer, in the same
WhatsApp message when it fits, offers them (« 2 questions à revoir — écris REVISION »). After the
answer, because the answer is what the person asked for, and only on the session's first message,
so it is offered once a session and never in the middle of a lesson. The carried-over note tells
the model the same.
"""

from __future__ import annotations

from bot import learning, safety
from bot.channel.context import Incoming
from handlers import turn
from handlers.turn import TRAILER


def review_offer(msg: Incoming, due: int) -> str:
    line = msg.t(f"{due} question{'s' if due > 1 else ''} à revoir — écris REVISION",
                 f"{due} question{'s' if due > 1 else ''} to review — send REVIEW")
    return line if msg.channel == "sms" else f"📝 {line}"


async def handle(msg: Incoming) -> bool:
    if msg.conversation.user_message_count != 1 or (msg.user.mode or "guest") == "guest":
        return False
    now = msg.services.clock()
    # Due within REVIEW_AHEAD, as the round REVISION starts counts them (bot.learning.rounds).
    due = await learning.due_count(msg.db, msg.user.id, now + learning.REVIEW_AHEAD)
    if not due or await safety.gentle(msg.db, msg.user.id, now, msg.extra.get(safety.GENTLE)):
        return False  # nothing due, or a day of distress: no offer (handlers/safety.py)
    # A round's count, as the nudges say it: what REVISION starts, never the whole backlog. It rides
    # with the answer's last text (handlers/turn/held.py); alone only when the turn sent no text.
    msg.extra[TRAILER] = review_offer(msg, min(due, learning.ROUND_SIZE))
    await turn.handle(msg)
    offer = msg.extra.pop(TRAILER, "")
    if offer:
        await msg.reply(offer)
    return True
