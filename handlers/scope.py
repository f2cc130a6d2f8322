"""A student's request plainly off a school's scope (the weather, celebrities, dating, writing code,
« act as ChatGPT ») gets one short message back to schoolwork naming the school, and no model call
(bot.safety.scope). It sits last before the agent turn, beside it: commands, menus, quiz answers,
REVISION and the onboarding have taken what is theirs, so only what the model would answer is
judged. A message of distress (handlers/safety.py heard it) and a message with files (a photo of an
exercise) always go on to the tutor; what is not plain goes on too, and the child prompt keeps the
model to school subjects and the bot's own features. Guests, parents and pro users are not scoped.
"""

from __future__ import annotations

import asyncio
import logging

from bot import safety
from bot.channel.context import Incoming
from handlers.safety import DISTRESS

log = logging.getLogger(__name__)


async def handle(msg: Incoming) -> bool:
    if (not safety.scoped(msg.user) or not msg.text or msg.extra.get("files")
            or msg.extra.get(DISTRESS)):
        return False
    if not await asyncio.to_thread(safety.plainly_off_scope, msg.text):
        return False
    log.info("request off a school's scope turned back", extra={"user_id": msg.user.id})
    await msg.reply(safety.scope_redirect(msg.services.settings.org_name, msg.lang))
    return True
