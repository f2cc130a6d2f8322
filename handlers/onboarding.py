"""A new number: its first message answered, with a welcome and a numbered profile menu.

The first message of a new number (`onboarding_step == "new"`) first sets the language it is answered
in when it is clearly French or English (bot.channel.language; else a later guest message may, until
one has or LANGUE was used), then is answered as a guest turn, then the welcome and the menu
(1 Élève, 2 Parent, 3 Professionnel) follow: the answer first because it is what the person asked
for, the menu last because it is what they are expected to answer next, and the last message is the
one on screen. A first message with nothing to answer (a greeting, a
bare « 1 », « 2 » or « 3 » sent before any menu was seen, an emoji) gets only the welcome. A
number the operator enrolled with a mode before it wrote is answered in that mode, then welcomed
without the profile question.

Until a profile is chosen the user is a guest: their other messages go on to the agent turn as
guest chat (text only, no tools). The choice sets the mode:
- 1 Élève: role "student", mode "child" (the tutor with its 22 tools);
- 2 Parent: role "parent", mode "child" — the role gives the parents' prompt (their children's
  figures; help to help the child, never the answer) and the child mode's tools seen for a parent
  (no quiz, e-mail drafts as a pro: tools.offered), and lets the parents' features (linking a
  child, weekly summaries) recognise them; spoken to with « vous », as a pro is;
- 3 Professionnel: role "pro", mode "pro" (all 24 tools).
The signup credits are granted once, when the profile is chosen (the ledger's ref makes it so).
A student is then asked their class once, as a numbered menu (handlers/level.py answers it; any
other message skips it), as is a student the operator enrolled, after their welcome.

On WhatsApp the profile menu is also three buttons (bot.channel.buttons): the welcome makes it the
conversation's pending menu (kind "profile"), so a tap is its number, checked as typing it is
(handlers/buttons.py), and a tap once the profile is chosen is stale. Typing the number or the word
works as before, with or without that menu.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace

from sqlalchemy import select

from bot import clock, learning
from bot.billing import credits
from bot.channel import menus
from bot.channel.buttons import Menu
from bot.channel.context import Incoming
from bot.channel.keywords import keyword
from bot.channel.language import spoken_language
from bot.channel.locale import default_locale, locale_for
from bot.storage.models import InboundMessage, User
from bot.texts import tutor_of
from handlers import turn
from handlers.commands import LANGUAGE_WORDS
from handlers.help import to_audience
from handlers.profile_menu import PROFILE_MENU_KIND, PROFILE_NAMES, profile_menu

PROFILES = {
    "1": ("student", "child"), "ELEVE": ("student", "child"), "STUDENT": ("student", "child"),
    "2": ("parent", "child"), "PARENT": ("parent", "child"),
    "3": ("pro", "pro"), "PROFESSIONNEL": ("pro", "pro"), "PRO": ("pro", "pro"),
    "PROFESSIONAL": ("pro", "pro"),
}
# Words of a message that only says hello (compared after `keyword`: upper case, no accents).
GREETINGS = frozenset({
    "BONJOUR", "BONSOIR", "SALUT", "SLT", "BJR", "BSR", "COUCOU", "CC", "HELLO", "HI", "HEY", "ALLO",
    "YO", "SALAM", "SALAMALEKOUM", "BONNE", "JOURNEE", "SOIREE", "GOOD", "MORNING", "EVENING",
})
FILLERS = frozenset({"DEBLO", "A", "TOI", "VOUS", "TOUS", "MONSIEUR", "MADAME", "THERE", "ET", "CA", "VA"})


def nothing_to_answer(msg: Incoming) -> bool:
    """True for a first message the welcome fully answers: a greeting, a bare profile word, nothing."""
    if msg.extra.get("files"):
        return False
    word = keyword(msg.text)
    if word in PROFILES:
        return True
    words = re.findall(r"[A-Z0-9]+", word)
    return not words or (all(w in GREETINGS or w in FILLERS for w in words)
                         and any(w in GREETINGS for w in words))


def _hello(msg: Incoming) -> str:
    name = (msg.user.display_name or "").split(" ")[0]
    return msg.t(f"Bienvenue sur Deblo, {name} ! 👋" if name else "Bienvenue sur Deblo ! 👋",
                 f"Welcome to Deblo, {name}! 👋" if name else "Welcome to Deblo! 👋")


def _tutor_line(msg: Incoming) -> str:
    """« Ici Deblo, le tuteur de <école>. »: the school whose service this is (ORG_NAME), or nothing."""
    tutor = tutor_of(msg.services.settings.org_name, msg.lang)
    return msg.t(f" Ici {tutor}.", f" This is {tutor}.") if tutor else ""


def zone_note(msg: Incoming) -> str:
    """For a number whose zone is one of its country's several, the prefix not telling which (a DR
    Congo mobile gets Kinshasa's): the zone given, and FUSEAU to change it; else nothing."""
    place = locale_for(msg.user.phone, default_locale(msg.services.settings))
    if not place.guessed or msg.user.timezone != place.timezone:
        return ""
    now = msg.services.clock().astimezone(clock.zone(place.timezone)).strftime("%H:%M")
    return msg.t(f"\n\nLes rappels suivent l'heure de {place.timezone} (il est {now}). Pas la "
                 "bonne ? FUSEAU et le nom de la ville.",
                 f"\n\nI set your reminders to {place.timezone} time (it is {now}). Not yours? Send "
                 "TIMEZONE and the name of your city.")


def welcome(msg: Incoming, answered: bool = False) -> str:
    """The welcome and the profile menu; `answered`: it follows the answer to a first question."""
    gift = msg.services.settings.signup_credits
    if answered:
        more = msg.t("D'autres questions ? Elles sont les bienvenues.", "Ask me more whenever you like.")
    else:
        more = msg.t("Une question peut aussi venir tout de suite.",
                     "You can also ask me a question right away.")
    # Named as the school's tutor when ORG_NAME is set, in as many words as before: an SMS welcome
    # stays within two segments.
    tutor = tutor_of(msg.services.settings.org_name, msg.lang)
    what = msg.t(f"{tutor} : devoirs, révisions et travail." if tutor
                 else "Deblo aide pour les devoirs, les révisions et le travail.",
                 f"{tutor}: homework, revision and work." if tutor
                 else "Deblo helps with homework, revision and work.")
    return msg.t(
        f"{_hello(msg)} {what}{zone_note(msg)}\n\n"
        "Quel profil ? Réponse avec le numéro"
        + (f" ({gift} crédits offerts)" if gift > 0 else "") + " :\n"
        "1 Élève\n2 Parent\n3 Professionnel\n\n"
        f"{more} MENU : toutes les commandes. STOP : ne plus rien recevoir.",
        f"{_hello(msg)} {what}{zone_note(msg)}\n\n"
        "Who are you? Reply with the number" + (f" ({gift} free credits)" if gift > 0 else "") + ":\n"
        "1 Student\n2 Parent\n3 Professional\n\n"
        f"{more} MENU: every command. STOP: receive nothing more.",
    )


async def enrolled_welcome(msg: Incoming) -> str:
    """For a number the operator set up: its profile is chosen, so no menu, just what it has."""
    balance = await credits.balance(msg.db, msg.user.id)
    fr, en = PROFILE_NAMES.get(msg.user.role or "", ("", ""))
    profile, credit = (f" (profil {fr})" if fr else ""), f"{balance} crédit{'s' if balance > 1 else ''}"
    return to_audience(
        msg,
        f"{_hello(msg)}{_tutor_line(msg)} Ton compte est prêt{profile} et tu as {credit}. Pose-moi tes "
        "questions ou envoie la photo d'un exercice. Écris MENU pour voir toutes les commandes, STOP pour "
        "ne plus recevoir de messages.",
        f"{_hello(msg)}{_tutor_line(msg)} Votre compte est prêt{profile} et vous avez {credit}. Posez-moi "
        "vos questions ou envoyez la photo d'un document. Écrivez MENU pour voir toutes les commandes, STOP "
        "pour ne plus recevoir de messages.",
        f"{_hello(msg)}{_tutor_line(msg)} Your account is ready" + (f" ({en} profile)" if en else "")
        + f" and you have {balance} credit{'s' if balance != 1 else ''}. Ask me your questions or send a "
        "photo of an exercise. Send MENU to see every command, STOP to receive no more messages.",
    )


def confirmation(msg: Incoming, role: str, balance: int | None) -> str:
    """« tu » to a student, « vous » to a parent or a pro (one register per audience)."""
    if role == "student":
        return _student_confirmation(msg, balance)
    return _adult_confirmation(msg, role, balance)


def _student_confirmation(msg: Incoming, balance: int | None) -> str:
    gift = msg.t(f" Je t'offre {balance} crédits pour commencer.",
                 f" Here are {balance} credits to start.") if balance else ""
    return msg.t("C'est parti ! Pose-moi une question ou envoie la photo d'un exercice.",
                 "Let's go! Ask me a question or send a photo of an exercise.") + gift


def _adult_confirmation(msg: Incoming, role: str, balance: int | None) -> str:
    gift = msg.t(f" Je vous offre {balance} crédits pour commencer.",
                 f" Here are {balance} credits to start.") if balance else ""
    if role == "parent":
        return msg.t("Bienvenue ! Je peux vous aider à accompagner votre enfant dans ses devoirs et vous "
                     "tenir au courant de ses progrès. Posez-moi votre question.",
                     "Welcome! I can help you support your child with homework and keep you informed of "
                     "their progress. Ask me your question.") + gift
    return msg.t("Parfait. Documents, e-mails, calculs, recherches : dites-moi ce dont vous avez besoin.",
                 "Great. Documents, e-mails, calculations, research: tell me what you need.") + gift


async def take_language(msg: Incoming) -> None:
    """The first message's own language over its country's: « Hello, can you help me? » from a
    Douala number is answered in English from this message on. Only French and English are served:
    another language, or too little to tell (« 1 », a photo), keeps the country's. The model loads
    once per process, in a thread, off the event loop."""
    spoken = await asyncio.to_thread(spoken_language, msg.text) if msg.text.strip() else None
    if spoken in ("fr", "en") and spoken != msg.user.language:
        msg.user.language = spoken
        await msg.db.flush()


async def later_language(msg: Incoming) -> None:
    """A guest's message before a profile is chosen decides the language as the first one would,
    while none of their messages before it was clear enough (« 👋 », a photo, « 1 ») and LANGUE was
    not used: the choice is made once, by the first clear message, and LANGUE's always stands."""
    spoken = await asyncio.to_thread(spoken_language, msg.text) if msg.text.strip() else None
    if spoken not in ("fr", "en") or spoken == msg.user.language:
        return
    earlier = (await msg.db.scalars(
        select(InboundMessage.body).where(InboundMessage.user_id == msg.user.id,
                                          InboundMessage.id < msg.inbound.id)
        .order_by(InboundMessage.id).limit(20))).all()
    for body in earlier:
        if keyword(body).split(" ")[0] in LANGUAGE_WORDS:
            return
        if await asyncio.to_thread(spoken_language, body) in ("fr", "en"):
            return
    msg.user.language = spoken
    await msg.db.flush()


async def first_contact(msg: Incoming) -> bool:
    """The answer (unless there is nothing to answer), then the welcome. The step moves on only
    once the welcome went out: a turn that fails leaves it "new", so the next message gets both."""
    user = msg.user
    enrolled = (user.mode or "guest") != "guest"
    if not enrolled:  # an enrolled number's language is the one its school or operator gave
        await take_language(msg)
    question = not nothing_to_answer(msg)
    if question:
        await turn.handle(msg)
    text = await enrolled_welcome(msg) if enrolled else welcome(msg, answered=question)
    menu = await level_question(msg) if enrolled else await profile_menu(msg)
    if menu is None:
        await msg.reply(text)
    else:  # the profile menu's numbered text is the welcome's; the class menu's follows it
        await msg.reply(menu=replace(menu, body=f"{text}\n\n{menu.body}" if menu.body else text))
    user.onboarding_step = None if enrolled else "profile"
    await msg.db.flush()
    return True


def needs_level(user: User) -> bool:
    """A student whose class is not known and was never asked."""
    return user.role == "student" and not user.school_level and user.level_asked_at is None


async def level_question(msg: Incoming) -> Menu | None:
    """The class menu, made the pending menu, for a student whose class is not known and was never
    asked (None otherwise); committed, so that the reply carrying it can go."""
    if not needs_level(msg.user):
        return None
    menu = await learning.offer_level_menu(msg.services, msg.db, msg.user, msg.conversation.id,
                                          msg.services.clock())
    await msg.db.commit()
    return menu


async def choose_profile(msg: Incoming, role: str, mode: str) -> None:
    user = msg.user
    user.role, user.mode, user.onboarding_step = role, mode, None
    await msg.db.flush()
    granted = await credits.apply(msg.db, user.id, msg.services.settings.signup_credits, "signup",
                                  ref=f"signup:{user.id}")
    text = confirmation(msg, role, granted and msg.services.settings.signup_credits)
    pending = await menus.get_menu(msg.services, msg.conversation.id, db=msg.db)
    if pending is not None and pending.get("kind") == PROFILE_MENU_KIND:  # answered: its taps are stale
        await menus.clear_menu(msg.services, msg.conversation.id, db=msg.db)
        await msg.db.commit()
    level_menu = await level_question(msg)
    if level_menu is None:
        await msg.reply(text)
        return
    await msg.reply(menu=replace(level_menu, body=f"{text}\n\n{level_menu.body}"))


async def handle(msg: Incoming) -> bool:
    user = msg.user
    if user.onboarding_step == "new":
        return await first_contact(msg)
    # A guest set up by the operator (no onboarding step) is offered the same profile choice.
    chooses = user.onboarding_step is not None or (user.mode or "guest") == "guest"
    choice = PROFILES.get(keyword(msg.text)) if chooses else None
    if choice is None:
        if user.onboarding_step == "profile":
            await later_language(msg)
        return False  # guest chat until a profile is chosen
    await choose_profile(msg, *choice)
    return True
