"""The student's class: CLASSE / LEVEL shows it and offers the class menu, CLASSE 4e / LEVEL 4e sets
it, and a number (or a level's name) answers the pending class menu.

The menu is asked once (bot.learning.levels): any other message goes on down the chain
as usual and the menu is dropped, so « je ne sais pas » or a question simply skips it. On WhatsApp
its list offers the cycles: a tapped cycle gets its levels as a second menu (handlers/buttons.py
has already checked that the tap is for the pending menu); a tapped level is its number.
"""

from __future__ import annotations

from dataclasses import replace

from bot import learning
from bot.channel import menus
from bot.channel.buttons import tapped
from bot.channel.context import Incoming
from bot.channel.keywords import keyword

LEVEL_WORDS = frozenset({"CLASSE", "LEVEL", "CLASS", "NIVEAU"})


async def _set(msg: Incoming, level: str) -> None:
    msg.user.school_level = level
    msg.user.level_asked_at = msg.user.level_asked_at or msg.services.clock()
    await menus.clear_menu(msg.services, msg.conversation.id, db=msg.db)
    await msg.db.commit()
    await msg.reply(msg.t(f"C'est noté : classe {level}. J'adapte mes explications à ton niveau.",
                          f"Noted: class {level}. I will fit my explanations to your level."))


async def _show(msg: Incoming) -> None:
    current = msg.user.school_level
    head = msg.t(f"Ta classe : {current}." if current else "Je ne connais pas encore ta classe.",
                 f"Your class: {current}." if current else "I do not know your class yet.")
    menu = await learning.offer_level_menu(msg.services, msg.db, msg.user, msg.conversation.id,
                                          msg.services.clock())
    await msg.db.commit()
    await msg.reply(menu=replace(menu, body=f"{head}\n{menu.body}"))


async def _command(msg: Incoming, rest: str) -> bool:
    if not rest:
        await _show(msg)
        return True
    level = learning.parse_level(rest)
    if level is None:
        if len(rest.split()) > 2:  # « classe grammaticale de ce mot ? » is a question for the tutor
            return False
        await msg.reply(msg.t(
            f"Je ne connais pas la classe « {rest[:30]} ». Écris par exemple CLASSE 4e, ou CLASSE seul pour "
            "voir la liste. Ta classe n'a pas changé.",
            f"I do not know the class \"{rest[:30]}\". Send for example LEVEL 4e, or LEVEL alone to see the "
            "list. Your class has not changed.",
        ))
        return True
    await _set(msg, level)
    return True


async def _menu_answer(msg: Incoming) -> bool:
    """The reply to a pending class menu: a level, a number out of range (told, menu kept), or
    anything else (menu dropped, the message goes on)."""
    menu = await menus.get_menu(msg.services, msg.conversation.id, db=msg.db)
    if menu is None or menu.get("kind") != learning.LEVEL_MENU_KIND:
        return False
    cycle = learning.cycle_by_number(msg.text) if tapped(msg.inbound.params or {}) else None
    if cycle is not None:
        levels = await learning.offer_cycle(msg.services, msg.db, msg.conversation.id, str(menu["menu_id"]),
                                           cycle, msg.lang)
        await msg.db.commit()
        await msg.reply(menu=levels)
        return True
    level = learning.level_by_number(msg.text) or learning.parse_level(msg.text)
    if level is not None:
        await _set(msg, level)
        return True
    if msg.text.strip().lstrip("#").rstrip(".)").strip().isdigit():
        count = len(learning.LEVELS)
        await msg.reply(msg.t(f"Réponds par un numéro entre 1 et {count}, ou pose ta question.",
                              f"Reply with a number from 1 to {count}, or ask your question."))
        return True
    await menus.clear_menu(msg.services, msg.conversation.id, db=msg.db)
    # Committed now: a later handler's get_menu would otherwise find the row this transaction is
    # deleting and put the menu back in the shared state.
    await msg.db.commit()
    return False


async def handle(msg: Incoming) -> bool:
    if keyword(msg.text).partition(" ")[0] in LEVEL_WORDS:
        if await _command(msg, msg.text.strip().partition(" ")[2].strip()):
            return True
    return await _menu_answer(msg)
