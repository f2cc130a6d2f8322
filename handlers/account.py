"""SUPPRIMER / DELETE: a user erases everything Deblo keeps about them, after a confirmation.

The request is remembered for CONFIRM_WINDOW_S (its time in the value: the service clock decides).
While it is pending, OUI/YES erases exactly as the operator's `users forget` does; any other
message cancels it (NON is just acknowledged, anything else is then answered as usual). Without
a pending request of their own, OUI goes on to the parents' confirmations.

On WhatsApp the question also carries two buttons, Oui / Non (bot.channel.buttons): it is the
conversation's pending menu for the same window, and a tap on Oui confirms as OUI does. Only a tap
does: a typed « 1 » is « any other message » and cancels, as before. A tap once the request is
over (answered, cancelled or expired) confirms nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from bot import accounts
from bot.channel import menus
from bot.channel.buttons import Menu, tapped
from bot.channel.context import Incoming
from bot.channel.keywords import keyword
from bot.storage.models import User

log = logging.getLogger("deblo.account")

CONFIRM_WINDOW_S = 300
DELETE_WORDS = frozenset({"SUPPRIMER", "DELETE", "SUPPRIMER MON COMPTE", "SUPPRIMER MES DONNEES",
                          "DELETE MY ACCOUNT", "DELETE MY DATA"})
YES_WORDS = frozenset({"OUI", "YES"})
NO_WORDS = frozenset({"NON", "NO"})
CONFIRM_KIND = "confirm_delete"


def ask_text(msg: Incoming) -> str:
    minutes = CONFIRM_WINDOW_S // 60
    return msg.t(
        "⚠️ Demande d'effacement de tout ce que Deblo garde de ce compte : conversations, fichiers, "
        "mémoire, tâches, résultats de quiz et liens avec parents ou enfants. Les crédits restants seront "
        "perdus ; seule la comptabilité anonyme des crédits et paiements est conservée. C'est définitif.\n\n"
        f"OUI dans les {minutes} minutes pour confirmer. Tout autre message annule.",
        "⚠️ You are asking to erase everything Deblo keeps about you: conversations, files, memory, "
        "tasks, quiz results and links with your parents or children. Your remaining credits will be "
        "lost; only the anonymous accounting of credits and payments is kept. This cannot be undone.\n\n"
        f"Reply YES within {minutes} minutes to confirm. Any other message cancels.",
    )


def _pending(raw: str | None, now: datetime) -> bool:
    if raw is None:
        return False
    try:
        asked = datetime.fromisoformat(raw)
    except ValueError:
        return False
    return timedelta(0) <= now - asked <= timedelta(seconds=CONFIRM_WINDOW_S)


async def _ask(msg: Incoming, key: str, now: datetime) -> None:
    await msg.services.state.kv_set(key, now.isoformat(), CONFIRM_WINDOW_S)
    menu_id = await menus.set_menu(msg.services, msg.conversation.id, CONFIRM_KIND, {}, CONFIRM_WINDOW_S,
                                   db=msg.db)
    await msg.db.commit()  # sends write in their own sessions; SQLite has one writer at a time
    buttons = (msg.t("Oui", "Yes"), msg.t("Non", "No"))
    await msg.reply(kind="system", menu=Menu(menu_id=menu_id, body=ask_text(msg), options=buttons,
                                             language=msg.lang))


async def _tapped_answer(msg: Incoming) -> bool | None:
    """A tap on the question's buttons: True for Oui, False for Non; None for anything else. The
    question is dropped either way once a message came (its buttons answer nothing more)."""
    menu = await menus.get_menu(msg.services, msg.conversation.id, db=msg.db)
    if menu is None or menu.get("kind") != CONFIRM_KIND:
        return None
    await menus.clear_menu(msg.services, msg.conversation.id, db=msg.db)
    if tapped(msg.inbound.params or {}) is None:
        return None
    return msg.text.strip() == "1"  # handlers/buttons.py made the tap its number


async def handle(msg: Incoming) -> bool:
    state, now = msg.services.state, msg.services.clock()
    key = accounts.deletion_request_key(msg.user.id)
    word = keyword(msg.text)
    if word in DELETE_WORDS:
        await _ask(msg, key, now)
        return True
    raw = await state.kv_get(key)
    if raw is None and tapped(msg.inbound.params or {}) is None:
        return False  # the common case, with no look at the pending menu
    if raw is not None:
        await state.kv_delete(key)
    tap = await _tapped_answer(msg)
    if raw is None or not _pending(raw, now):
        if tap is None:
            return False  # expired: this message is not an answer to it
        await msg.db.commit()
        await msg.reply(msg.t("Cette demande de suppression a expiré : rien n'a été effacé.",
                              "That deletion request has expired: nothing was erased."), kind="system")
        return True
    if word in YES_WORDS or tap is True:
        await erase(msg)
        return True
    await msg.db.commit()
    await msg.reply(msg.t("Suppression annulée : les données sont conservées.",
                          "Deletion cancelled: your data is kept."), kind="system")
    return word in NO_WORDS or tap is False


async def erase(msg: Incoming) -> None:
    from bot.channel.outbound import send_to_user

    user = msg.user
    # Who to tell, kept before the user's row goes (an object of no session, without an id).
    ghost = User(phone=user.phone, external_id=user.external_id, language=user.language,
                 last_channel=msg.channel, last_whatsapp_inbound_at=user.last_whatsapp_inbound_at,
                 opted_out=False)
    await msg.db.commit()
    await accounts.forget(msg.services, user.id, user.phone, user.external_id)
    # This turn's message and user rows no longer exist: the worker must not write them back.
    msg.db.expunge_all()
    result = await send_to_user(msg.services, ghost, channel=msg.channel, kind="system", text=msg.t(
        "C'est fait : tout ce que Deblo gardait de ce compte est effacé. Un nouveau message "
        "recommencera comme celui d'un nouvel utilisateur.",
        "Done: everything Deblo kept about you is erased. If you write again, you will start as a new user.",
    ))
    if not result.ok:
        log.warning("erasure done but not confirmed to the user",
                    extra={"skipped": result.skipped, "error": result.error})
    # The record of that last message would keep the number: masked (its status callbacks still
    # find the row).
    if ghost.phone or ghost.external_id:
        await accounts.unaddress(msg.services, ghost.phone or "", ghost.external_id)
