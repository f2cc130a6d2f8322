"""One-word commands: MENU (every command), NOUVEAU/NEW (a new session at once), CREDITS, LANGUE."""

from __future__ import annotations

from bot.capabilities import credits, menus
from bot.capabilities.learner import start_session
from bot.channel.context import Incoming
from bot.channel.keywords import keyword
from bot.storage.models import Conversation

MENU_WORDS = frozenset({"MENU"})
NEW_WORDS = frozenset({"NOUVEAU", "NEW", "NOUVELLE CONVERSATION", "NEW CHAT"})
CREDIT_WORDS = frozenset({"CREDITS", "CREDIT", "SOLDE", "BALANCE"})
LANGUAGE_WORDS = ("LANGUE", "LANGUAGE")
LANGUAGES = {"FR": "fr", "FRANCAIS": "fr", "FRENCH": "fr", "EN": "en", "ENGLISH": "en", "ANGLAIS": "en"}


# Every command a user can send, in the user's language, for MENU and AIDE/HELP. Kept short so
# that the list, once transliterated to GSM-7, is one SMS of at most two segments (306 characters).
COMMANDS = {
    "fr": ("PROGRES, TACHES, MEMOIRE, CREDITS, ACHETER\n"
           "NOUVEAU : autre sujet\n"
           "LANGUE EN : anglais\n"
           "EMAIL adresse : tes fichiers\n"
           "PARENT numéro : lier un parent\n"
           "SUPPRIMER : tes données\n"
           "STOP : plus de messages"),
    "en": ("PROGRESS, TASKS, MEMORY, CREDITS, BUY\n"
           "NEW: new topic\n"
           "LANGUAGE FR: French\n"
           "EMAIL address: your files\n"
           "PARENT number: link a parent\n"
           "DELETE: erase your data\n"
           "STOP: no more messages"),
}


def profile_line(msg: Incoming) -> str:
    """The exact reply that opens a profile, for someone who has none yet."""
    gift = msg.services.settings.signup_credits
    return msg.t(
        "Profil : réponds 1 Élève, 2 Parent, 3 Pro" + (f" (+{gift} crédits)" if gift > 0 else ""),
        "Profile: reply 1 Student, 2 Parent, 3 Pro" + (f" (+{gift} credits)" if gift > 0 else ""),
    )


def is_guest(msg: Incoming) -> bool:
    return (msg.user.mode or "guest") == "guest"


def command_list(msg: Incoming, head: str) -> str:
    """`head`, the profile choice for a guest, then the commands. Plain words and `**bold**` only:
    no `_` or single `*` that WhatsApp would turn into italics."""
    guest = is_guest(msg)
    lines = [head, profile_line(msg)] if guest else [head]
    if msg.user.role == "student" and not guest:  # a guest's list has no room for it on SMS
        lines.append(msg.t("REVISION, CLASSE : réviser, ta classe", "REVIEW, LEVEL: review, your class"))
    lines.append(COMMANDS["en" if msg.lang == "en" else "fr"])
    if msg.user.role == "parent" and not guest:  # a guest's list has the profile line instead
        lines.append(msg.t("ENFANTS : progrès de ton enfant", "CHILDREN: your child's progress"))
    return "\n".join(lines)


def menu_text(msg: Incoming) -> str:
    return command_list(msg, msg.t("**Menu Deblo** : pose ta question ou envoie une photo.",
                                   "**Deblo menu**: ask your question or send a photo."))


def help_text(msg: Incoming) -> str:
    return command_list(msg, msg.t("Deblo t'aide à l'école et au travail. Pose ta question !",
                                   "Deblo helps with school and work. Ask your question!"))


async def show_commands(msg: Incoming, text: str) -> None:
    """A guest now sees the profile choice: a pending numbered menu (credit packs) would take the
    « 1 » they are told to send, so it is put aside, and the first-contact welcome is not needed."""
    if is_guest(msg):
        await menus.clear_menu(msg.services, msg.conversation.id, db=msg.db)
        if msg.user.onboarding_step == "new":
            msg.user.onboarding_step = "profile"
            await msg.db.flush()
    await msg.reply(text)


async def new_conversation(msg: Incoming) -> Conversation:
    """Closes the active conversation and opens a fresh session at once (history starts again,
    with the note carried over from the one closed: bot.capabilities.learner.sessions)."""
    old = msg.conversation
    fresh = await start_session(msg.db, msg.user.id, msg.services.clock())
    await menus.clear_menu(msg.services, old.id, db=msg.db)
    msg.conversation = fresh
    return fresh


async def handle(msg: Incoming) -> bool:
    word = keyword(msg.text)
    if word in MENU_WORDS:
        await show_commands(msg, menu_text(msg))
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
