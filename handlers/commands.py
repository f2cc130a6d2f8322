"""One-word commands: MENU / AIDE (every command, handlers.help; « AIDE MOT », « AIDE 2 »),
NOUVEAU/NEW (a new session at once), CREDITS, LANGUE."""

from __future__ import annotations

from bot.billing import credits
from bot.channel import formatting, menus
from bot.channel.context import Incoming
from bot.channel.keywords import keyword
from bot.learning import start_session
from bot.storage.models import Conversation
from bot.texts import tutor_of
from handlers import help

NEW_WORDS = frozenset({"NOUVEAU", "NEW", "NOUVELLE CONVERSATION", "NEW CHAT"})
CREDIT_WORDS = frozenset({"CREDITS", "CREDIT", "SOLDE", "BALANCE"})
LANGUAGE_WORDS = ("LANGUE", "LANGUAGE")
LANGUAGES = {"FR": "fr", "FRANCAIS": "fr", "FRENCH": "fr", "EN": "en", "ENGLISH": "en", "ANGLAIS": "en"}


def profile_line(msg: Incoming) -> str:
    """The exact reply that opens a profile, for someone who has none yet."""
    gift = msg.services.settings.signup_credits
    return msg.t(
        "Profil : répondre 1 Élève, 2 Parent, 3 Pro" + (f" (+{gift} crédits)" if gift > 0 else ""),
        "Profile: reply 1 Student, 2 Parent, 3 Pro" + (f" (+{gift} credits)" if gift > 0 else ""),
    )


def is_guest(msg: Incoming) -> bool:
    return (msg.user.mode or "guest") == "guest"


def heads(msg: Incoming, word: str) -> list[str]:
    """The first lines of MENU or AIDE: what Deblo is, and the profile choice for a guest. Plain
    words and `**bold**` only: no `_` or single `*` that WhatsApp would turn into italics."""
    if word in help.MENU_WORDS:
        head = help.to_audience(msg, "**Menu Deblo** : pose ta question ou envoie une photo.",
                                "**Menu Deblo** : posez votre question ou envoyez une photo.",
                                "**Deblo menu**: ask your question or send a photo.")
    else:
        # « Deblo, le tuteur de <école> »: the school whose service this is (ORG_NAME), when set.
        tutor = tutor_of(msg.services.settings.org_name, msg.lang)
        who = f"{tutor}," if tutor else "Deblo"
        head = help.to_audience(msg, f"{who} t'aide à l'école et au travail. Pose ta question !",
                                f"{who} vous aide pour l'école et le travail. Posez votre question !",
                                f"{who} helps with school and work. Ask your question!")
    return [head, profile_line(msg)] if is_guest(msg) else [head]


async def show_commands(msg: Incoming, word: str, rest: str = "") -> None:
    """MENU / AIDE, a later page or one command explained (handlers.help). A guest now sees the
    profile choice: a pending numbered menu (credit packs) would take the « 1 » they are told to
    send, so it is put aside, and the first-contact welcome is not needed."""
    if is_guest(msg) and not rest:
        await menus.clear_menu(msg.services, msg.conversation.id, db=msg.db)
        if msg.user.onboarding_step == "new":
            msg.user.onboarding_step = "profile"
            await msg.db.flush()
    longest = max((heads(msg, w) for w in ("MENU", "AIDE")),
                  key=lambda lines: len(formatting.to_sms("\n".join(lines))))
    await help.show_help(msg, heads(msg, word), rest, cut_with=longest)


async def new_conversation(msg: Incoming) -> Conversation:
    """Closes the active conversation and opens a fresh session at once (history starts again,
    with the note carried over from the one closed: bot.learning.sessions)."""
    old = msg.conversation
    fresh = await start_session(msg.db, msg.user.id, msg.services.clock())
    await menus.clear_menu(msg.services, old.id, db=msg.db)
    msg.conversation = fresh
    return fresh


async def handle(msg: Incoming) -> bool:
    word = keyword(msg.text)
    first, _, rest = word.partition(" ")
    if first in help.MENU_WORDS | help.HELP_WORDS and help.is_request(rest):
        await show_commands(msg, first, rest)
        return True
    if word in NEW_WORDS:
        await new_conversation(msg)
        await msg.reply(help.to_audience(
            msg,
            "Nouvelle conversation ! J'ai mis de côté notre échange précédent. De quoi veux-tu parler ?",
            "Nouvelle conversation ! J'ai mis de côté notre échange précédent. De quoi voulez-vous parler ?",
            "New conversation! I have put our previous exchange aside. What would you like to talk about?",
        ))
        return True
    if word in CREDIT_WORDS:
        balance = await credits.balance(msg.db, msg.user.id)
        await msg.reply(help.to_audience(
            msg,
            f"Tu as {balance} crédit{'s' if balance > 1 else ''}.",
            f"Vous avez {balance} crédit{'s' if balance > 1 else ''}.",
            f"You have {balance} credit{'s' if balance != 1 else ''}.",
        ))
        return True
    head, _, rest = word.partition(" ")
    if head in LANGUAGE_WORDS:
        await _language(msg, rest.strip())
        return True
    return False


async def _language(msg: Incoming, rest: str) -> None:
    """`LANGUE` alone says which language is spoken and how to change it (a word typed by chance
    never flips a child's language); `LANGUE FR` / `LANGUE EN` set it, and the confirmation, in the
    new language, says the way back."""
    wanted = LANGUAGES.get(rest) if rest else None
    if wanted is None:
        await msg.reply(help.to_audience(
            msg,
            "Je te parle en français. Pour l'anglais, écris LANGUE EN ; pour rester en français, LANGUE FR.",
            "Je vous parle en français. Pour l'anglais, écrivez LANGUE EN ; pour rester en français, "
            "LANGUE FR.",
            "I speak English with you. For French, send LANGUAGE FR; to stay in English, LANGUAGE EN.",
        ) if not rest else help.to_audience(msg, "Écris LANGUE FR ou LANGUE EN.",
                                            "Écrivez LANGUE FR ou LANGUE EN.",
                                            "Send LANGUAGE EN or LANGUAGE FR."))
        return
    msg.user.language = wanted
    await msg.db.flush()
    await msg.reply(help.to_audience(msg, "D'accord, je te parle en français. To switch back to English: "
                                     "LANGUAGE EN.",
                                     "D'accord, je vous parle en français. To switch back to English: "
                                     "LANGUAGE EN.",
                                     "OK, I will speak English with you. Pour revenir au français : "
                                     "LANGUE FR."))
