"""One-word commands: MENU, NOUVEAU/NEW (a fresh conversation), CREDITS, LANGUE/LANGUAGE."""

from __future__ import annotations

from sqlalchemy import update

from bot import credits, menus
from bot.context import Incoming
from bot.models import Conversation
from handlers.keywords import keyword

MENU_WORDS = frozenset({"MENU"})
NEW_WORDS = frozenset({"NOUVEAU", "NEW", "NOUVELLE CONVERSATION", "NEW CHAT"})
CREDIT_WORDS = frozenset({"CREDITS", "CREDIT", "SOLDE", "BALANCE"})
LANGUAGE_WORDS = ("LANGUE", "LANGUAGE")
LANGUAGES = {"FR": "fr", "FRANCAIS": "fr", "FRENCH": "fr", "EN": "en", "ENGLISH": "en", "ANGLAIS": "en"}


def menu_text(msg: Incoming) -> str:
    return msg.t(
        "*Menu Deblo*\n"
        "Pose-moi ta question directement, ou envoie une photo de ton exercice.\n\n"
        "NOUVEAU : commencer une nouvelle conversation\n"
        "CREDITS : voir ton solde de crédits\n"
        "LANGUE : passer en anglais (LANGUAGE EN) ou en français (LANGUE FR)\n"
        "AIDE : ce qu'est Deblo\n"
        "STOP : ne plus recevoir de messages",
        "*Deblo menu*\n"
        "Ask your question directly, or send a photo of your exercise.\n\n"
        "NEW: start a new conversation\n"
        "CREDITS: see your credit balance\n"
        "LANGUAGE: switch to French (LANGUE FR) or English (LANGUAGE EN)\n"
        "HELP: what Deblo is\n"
        "STOP: receive no more messages",
    )


async def new_conversation(msg: Incoming) -> Conversation:
    """Closes the active conversation and opens a fresh one (history starts again)."""
    old = msg.conversation
    await msg.db.execute(
        update(Conversation).where(Conversation.user_id == msg.user.id, Conversation.active.is_(True))
        .values(active=False)
    )
    fresh = Conversation(user_id=msg.user.id, active=True, created_at=msg.services.clock())
    msg.db.add(fresh)
    await msg.db.flush()
    await menus.clear_menu(msg.services.state, old.id)
    msg.conversation = fresh
    return fresh


async def handle(msg: Incoming) -> bool:
    word = keyword(msg.text)
    if word in MENU_WORDS:
        await msg.reply(menu_text(msg))
        return True
    if word in NEW_WORDS:
        await new_conversation(msg)
        await msg.reply(msg.t(
            "Nouvelle conversation ! J'ai mis de côté notre échange précédent. De quoi veux-tu parler ?",
            "New conversation! I have put our previous exchange aside. What would you like to talk about?",
        ))
        return True
    if word in CREDIT_WORDS:
        balance = await credits.balance(msg.db, msg.user.id)
        await msg.reply(msg.t(
            f"Tu as {balance} crédit{'s' if balance > 1 else ''}.",
            f"You have {balance} credit{'s' if balance != 1 else ''}.",
        ))
        return True
    head, _, rest = word.partition(" ")
    if head in LANGUAGE_WORDS:
        wanted = LANGUAGES.get(rest.strip()) if rest else ("en" if msg.lang == "fr" else "fr")
        if wanted is None:
            await msg.reply(msg.t("Écris LANGUE FR ou LANGUAGE EN.", "Send LANGUAGE EN or LANGUE FR."))
            return True
        msg.user.language = wanted
        await msg.db.flush()
        await msg.reply(msg.t("D'accord, je te parle en français.", "OK, I will speak English with you."))
        return True
    return False
