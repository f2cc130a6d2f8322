"""A child's message that signals distress: a caring reply with the helpline first, a flag for a
person, e-mails to the class's teachers and the admins; then the message goes on down the chain.

It sits right after opt-out: before files, menus, commands and the model, so that the first thing
the child reads is the kind message and the number to call, whatever else is pending. The message
is not taken: the tutor still answers it (« je veux mourir tellement cet exercice est dur » still
gets its exercise explained), because a false positive must cost a kind message, never a refusal
to teach, and a child in distress who asked for help with homework is helped with it too.

Then the bot is gentle that day (`bot.safety.gentle`): no review offer, no quiz, no nudge, no credit
notice; the model is told that the helpline was given and an adult told.
"""

from __future__ import annotations

import logging

from bot import safety
from bot.channel.context import Incoming

log = logging.getLogger(__name__)

DISTRESS = "safety.distress"  # msg.extra: the category heard in this message
QUIZ_TOOLS = frozenset({"interactive_quiz", "true_false_quiz"})  # not offered on that turn


async def handle(msg: Incoming) -> bool:
    if not safety.concerned(msg.user) or not msg.text:
        return False
    found = await safety.assess(msg.services, msg.text)
    if found is None:
        return False
    services, user = msg.services, msg.user
    # The turn that answers this message is gentle (handlers/turn): the model is told why.
    msg.extra[DISTRESS] = found.category
    # What the pipeline wrote is committed first: a send records its row in its own session, and
    # SQLite has one writer at a time.
    await msg.db.commit()
    # The same key on a run again of this message: the reply is not sent twice.
    await msg.reply(safety.caring_reply(services.settings.safety, user))
    flag = await safety.raise_flag(msg.db, user_id=user.id, category=found.category, source=found.source,
                                   text=msg.text, now=services.clock())
    await msg.db.commit()
    log.warning("distress flagged" if flag else "distress again while a flag is open",
                extra={"user_id": user.id, "category": found.category, "source": found.source,
                       "flag_id": flag.id if flag else None})
    if flag is not None:
        to = await safety.recipients(msg.db, services, user.id)
        await safety.notify(services, flag, user, to)
    return False
