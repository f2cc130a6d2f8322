"""A tapped button or list item (WhatsApp): answers the pending menu as typing its number does.

Its id is `<menu id>:<number>` (bot.channel.buttons). When the menu is the conversation's pending
one, the message's text becomes that number and goes on down the chain, so the menu's own handler
(quiz, review…) checks it exactly as a typed « 2 », on the server and with no model call. An id of
a menu no longer pending (answered, replaced or expired) gets a clear reply and nothing else: it
never answers a newer menu, and never reaches the model. A bare « Réponse 2 » (a list item's short
title) counts as « 2 ». A tap on a help list (AIDE / MENU) explains its command (handlers.help).
« Commencer » on a teacher's assignment (`devoir:1`, no pending menu either) is DEVOIR
(handlers.assignment).
The review reminders' buttons (bot.learning.NUDGE_MENU, no pending menu: a reminder may be tapped
days later): « Réviser » is REVISION, a round starts (handlers.review); « Plus tard » is answered.
"""

from __future__ import annotations

import re

from bot.channel.buttons import tapped
from bot.channel.context import Incoming
from bot.channel.menus import get_menu
from bot.learning import NUDGE_MENU
from bot.school import ASSIGNMENT_MENU
from handlers import help

# A list item's short title (« Réponse 2 », bot.channel.buttons), should a list reply come with its
# title alone: the number it stands for.
_ITEM_TITLE = re.compile(r"^(?:r[ée]ponse|answer)\s+([1-9][0-9]?)$", re.IGNORECASE)


async def handle(msg: Incoming) -> bool:
    picked = tapped(msg.inbound.params or {})
    if picked is None:
        title = _ITEM_TITLE.match(msg.text)
        if title is not None and await get_menu(msg.services, msg.conversation.id, db=msg.db) is not None:
            msg.text = title.group(1)
        return False
    menu_id, number = picked
    if help.is_help_menu(menu_id):  # a help list sets no pending menu: it is known by its id
        await msg.db.commit()  # sends write in their own sessions; SQLite has one writer at a time
        await help.answer_tap(msg, menu_id, number)
        return True
    if menu_id == NUDGE_MENU:
        return await _reminder_tap(msg, number)
    if menu_id == ASSIGNMENT_MENU:  # « Commencer » on an assignment's notice: DEVOIR, however late
        msg.text = "DEVOIR"
        return False
    menu = await get_menu(msg.services, msg.conversation.id, db=msg.db)
    if menu is not None and (menu.get("menu_id") == menu_id or menu.get("last_inbound") == msg.inbound.id):
        # A retried delivery of a tap already answered finds the next question pending: the menu's
        # handler sends the same reply again (its `last_inbound`).
        msg.text = str(number)
        return False
    await msg.db.commit()  # sends write in their own sessions; SQLite has one writer at a time
    stale = msg.t("Ce choix n'est plus valable : ce menu a déjà reçu une réponse ou a expiré. "
                  "Une réponse au dernier message, ou une question, fera l'affaire.",
                  "This choice is no longer valid: that menu was already answered or has expired. "
                  "Answer the latest message, or write me your question.")
    await msg.reply(stale if msg.channel == "sms" else f"⌛ {stale}")
    return True


async def _reminder_tap(msg: Incoming, number: int) -> bool:
    if number == 1:  # « Réviser »: the round starts as the typed word starts it
        msg.text = "REVISION"
        return False
    await msg.db.commit()  # sends write in their own sessions; SQLite has one writer at a time
    await msg.reply(msg.t("D'accord, à plus tard ! Écris REVISION quand tu veux réviser.",
                          "OK, later then! Send REVIEW whenever you want to review."))
    return True
