"""Opt-out first of all: after STOP (or ARRET…) the user gets nothing more of any kind until START.

WhatsApp has no keyword filter of its own, and Twilio's SMS defaults do not include the French
words, so the bot honours them itself. A typed STOP takes effect when the webhook stores it
(bot.channel.inbound): the messages before it are then never answered, and a turn still running
sends nothing more. Its confirmation comes from here, when its turn in the queue comes. HELP/AIDE
says what the bot is and lists every command, STOP included.
"""

from __future__ import annotations

from bot.channel.context import Incoming
from bot.channel.keywords import START_WORDS, STOP_WORDS, keyword
from handlers.commands import show_commands
from handlers.help import HELP_WORDS, to_audience


async def handle(msg: Incoming) -> bool:
    word = keyword(msg.text)
    user = msg.user
    if word in STOP_WORDS:
        # Already opted out when the webhook stored this message (or by an earlier STOP): said again.
        user.opted_out = True
        user.opted_out_at = user.opted_out_at or msg.services.clock()
        await msg.db.flush()
        await msg.reply(to_audience(
            msg,
            "C'est noté : tu ne recevras plus aucun message de Deblo. Écris START pour revenir.",
            "C'est noté : vous ne recevrez plus aucun message de Deblo. Écrivez START pour revenir.",
            "Done: you will not receive any more messages from Deblo. Send START to come back.",
        ), kind="optout")
        return True
    if user.opted_out:
        if word in START_WORDS:
            user.opted_out = False
            user.opted_out_at = None
            await msg.db.flush()
            await msg.reply(to_audience(
                msg,
                "C'est noté, tu recevras de nouveau mes messages. Écris MENU pour voir ce que je sais faire.",
                "C'est noté, vous recevrez de nouveau mes messages. Écrivez MENU pour voir ce que je sais "
                "faire.",
                "Done, you will receive my messages again. Send MENU to see what I can do.",
            ), kind="optout")  # the flag is back in this uncommitted transaction only
        # Anything else from someone who opted out is received and kept, but never answered.
        return True
    if word in HELP_WORDS:
        await show_commands(msg, word)
        return True
    return False
