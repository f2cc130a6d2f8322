"""A reply to the pending quiz: checked on the server, verdict at once, no model call.

A reply answers the quiz when it is an option number (`2`, `2.`, `2️⃣`), the option's letter (`b`),
the option's text, or for true/false `vrai`/`faux`/`true`/`false`/`v`/`f`. Anything else goes on to
the agent and the quiz stays pending until its TTL. A number sent after the quiz expired gets a
short hint instead of going to the agent as a bare "2". The answer moves the skill's mastery and
schedules the quiz's item for review (bot.learning.record). While questions are due, one of them
comes right after the verdict (handlers/review.py, `weave`).
"""

from __future__ import annotations

from sqlalchemy import select

from bot.channel.context import Incoming
from bot.channel.menus import clear_menu, expired_menu_kind
from bot.learning import find_item, record_checked
from bot.learning.quiz import (
    MENU_KIND,
    Quiz,
    history_note,
    number_in,
    parse_answer,
    pending_quiz,
    render_verdict,
)
from bot.storage.models import Message
from handlers import review


async def _expired_hint(msg: Incoming) -> None:
    await msg.db.commit()  # sends write in their own sessions; SQLite has one writer at a time
    hint = msg.t("Ce quiz a expiré. Un nouveau quiz ? Il suffit de le demander !",
                 "This quiz has expired. Ask me for a new one whenever you like!")
    await msg.reply(hint if msg.channel == "sms" else f"⏰ {hint}")


async def handle(msg: Incoming) -> bool:
    services = msg.services
    conversation_id = msg.conversation.id
    quiz = await pending_quiz(services, conversation_id, msg.user.id, db=msg.db)
    if quiz is None:
        expired = number_in(msg.text) is not None and (
            await expired_menu_kind(services, conversation_id, db=msg.db) == MENU_KIND
        )
        if expired:
            await _expired_hint(msg)
            return True
        return False
    now = services.clock()
    if now >= quiz.expires_at:
        if number_in(msg.text) is not None:
            await _expired_hint(msg)
            return True
        return False
    chosen = parse_answer(quiz, msg.text)
    if chosen is None:
        return False
    # One answer per quiz: the first reply to claim it wins (a retried delivery of that same
    # message may claim it again, so a crash between claim and commit does not lose the answer).
    claim_key = f"quiz-answered:{quiz.quiz_id}"
    claim_ttl_s = services.settings.quiz_ttl_s * 2
    if not await services.state.set_if_absent(claim_key, str(msg.inbound.id), claim_ttl_s):
        if await services.state.kv_get(claim_key) != str(msg.inbound.id):
            return False
    seconds = max(0.0, (now - quiz.asked_at).total_seconds())
    if not await _already_recorded(msg):
        await _record(msg, quiz, chosen, seconds, history_note(quiz, chosen, seconds))
    # Committed before sending: the send records its own row in another session, which SQLite
    # would make wait behind this one's open write.
    await msg.db.commit()
    await clear_menu(services, conversation_id)
    verdict = render_verdict(quiz, chosen, msg.lang, msg.channel)
    if not await review.weave(msg, verdict, now):  # else a question due came with the verdict
        await msg.reply(verdict)
    return True


async def _already_recorded(msg: Incoming) -> bool:
    """A retried delivery of a message whose answer was already recorded (a crash after commit)."""
    found = await msg.db.scalar(
        select(Message.id).where(Message.conversation_id == msg.conversation.id,
                                 Message.inbound_id == msg.inbound.id, Message.role == "note").limit(1)
    )
    return found is not None


async def _record(msg: Incoming, quiz: Quiz, chosen: int, seconds: float, note: str) -> None:
    """The checked answer (result, the skill's mastery, the item's first schedule) and the note,
    in the handler's transaction: one commit, and `_already_recorded` sees it on a retry."""
    now = msg.services.clock()
    item = await find_item(msg.db, msg.user.id, quiz.quiz_id)
    await record_checked(
        msg.db, msg.services.settings.learning, user_id=msg.user.id, conversation_id=msg.conversation.id,
        item=item, subject=quiz.subject, topic=quiz.topic, correct=chosen == quiz.correct_index,
        seconds=seconds, source="quiz", now=now, chosen=chosen,
    )
    # The note tells the tutor the outcome on its next turn (the history builder shows "note" rows).
    msg.db.add(
        Message(conversation_id=msg.conversation.id, role="note", content=note,
                inbound_id=msg.inbound.id, created_at=now)
    )
