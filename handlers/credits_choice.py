"""The answer to the credit-packs menu (a number) gives a payment link; ACHETER / BUY shows the menu."""

from __future__ import annotations

import re

from unidecode import unidecode

from bot.billing import payments, pool
from bot.billing.payments.provider import PaymentError
from bot.channel import menus
from bot.channel.context import Incoming

_SHOW = re.compile(r"^(acheter|acheter des credits|acheter credits|buy|buy credits|recharger|top up)$")
_NUMBER = re.compile(r"^#?\s*(\d{1,2})\s*[.)]?$")


async def _not_offered(msg: Incoming) -> str:
    """ACHETER with no payments set up: said plainly, with what a class's student can do instead."""
    place = await pool.standing(msg.db, msg.user.id, pool.daily_cap(msg.services.settings, msg.user,
                                                                    msg.services.clock))
    if place.in_class:
        return msg.t("L'achat de crédits n'est pas proposé ici. Quand les crédits de ta classe sont épuisés, "
                     "demande à ton enseignant de les recharger.",
                     "Buying credits is not offered here. When your class's credits are used up, ask your "
                     "teacher to top them up.")
    return msg.t("L'achat de crédits n'est pas disponible pour le moment.",
                 "Buying credits is not available right now.")


async def handle(msg: Incoming) -> bool:
    text = re.sub(r"\s+", " ", unidecode(msg.text).strip().lower()).rstrip("!.")
    if _SHOW.match(text):
        reason = payments.unavailable_reason(msg.services.settings)
        if reason:
            await msg.reply(await _not_offered(msg))
        else:
            await msg.reply(menu=await payments.show_menu(msg.services, msg.conversation.id, msg.lang))
        return True
    number = _NUMBER.match(text)
    if number is None:
        return False
    menu = await menus.get_menu(msg.services, msg.conversation.id, db=msg.db)
    if menu is None:
        if await menus.expired_menu_kind(msg.services, msg.conversation.id, db=msg.db) == "credits":
            await menus.clear_menu(msg.services, msg.conversation.id, db=msg.db)
            await msg.reply(
                msg.t(
                    "Ce menu a expiré. ACHETER pour revoir les offres.",
                    "That menu has expired. Send BUY to see the packs again.",
                )
            )
            return True
        return False
    if menu.get("kind") != "credits":
        return False
    offered = payments.packs(msg.services.settings)
    choice = int(number.group(1))
    if not 1 <= choice <= len(offered):
        await msg.reply(
            msg.t(
                f"Réponse attendue : un numéro entre 1 et {len(offered)}.",
                f"Reply with a number from 1 to {len(offered)}.",
            )
        )
        return True
    pack = offered[choice - 1]
    try:
        _payment, checkout = await payments.start_purchase(msg.services, msg.user.id, pack)
    except PaymentError:
        await msg.reply(
            msg.t(
                "Le service de paiement ne répond pas pour le moment. Merci de réessayer dans quelques "
                "minutes.",
                "The payment service is not answering right now. Try again in a few minutes.",
            )
        )
        return True
    await menus.clear_menu(msg.services, msg.conversation.id, db=msg.db)
    await msg.reply(payments.payment_link_text(pack, checkout, msg.lang))
    return True
