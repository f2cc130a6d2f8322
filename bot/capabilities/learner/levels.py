"""The school levels of francophone West Africa, as a student names them, and the class menu.

A level is stored as written here (« 4e », « Tle »): the prompt shows `User.school_level` as is.
The menu is numbered text (bot.capabilities.menus); a student may also type the level itself
(« 4e », « 4ème », « terminale »), which is read by `parse_level` wherever a level is asked.
"""

from __future__ import annotations

import re
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession
from unidecode import unidecode

from bot.capabilities.menus import set_menu
from bot.services import Services
from bot.storage.models import Message, User

LEVELS = ("CP1", "CP2", "CE1", "CE2", "CM1", "CM2", "6e", "5e", "4e", "3e", "2nde", "1re", "Tle",
          "Université", "Autre")
LEVEL_MENU_KIND = "level"

_ALIASES = {
    "6e": ("6eme", "6em", "6 eme", "sixieme"), "5e": ("5eme", "5em", "5 eme", "cinquieme"),
    "4e": ("4eme", "4em", "4 eme", "quatrieme"), "3e": ("3eme", "3em", "3 eme", "troisieme"),
    "2nde": ("2nd", "2de", "2e", "2eme", "seconde"), "1re": ("1ere", "1er", "premiere"),
    "Tle": ("terminale", "term", "tale"), "Université": ("universite", "fac", "faculte", "university"),
    "Autre": ("other", "autres"),
}


def _key(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", unidecode(text or "").lower()).split())


_BY_KEY = {_key(alias): level for level in LEVELS for alias in (level, *_ALIASES.get(level, ()))}


def parse_level(text: str) -> str | None:
    """The level a student's words name (« 4ème » → « 4e », « cm 2 » → « CM2 »), else None."""
    key = re.sub(r"^(?:de|en|in|la|le) ", "", _key(text))  # « en 4e », « de 3ème »
    return _BY_KEY.get(key) or _BY_KEY.get(key.replace(" ", ""))


def level_by_number(text: str) -> str | None:
    """The level chosen by its number in the menu (« 9 » → « 4e »), else None."""
    found = re.fullmatch(r"#?\s*(\d{1,2})\s*[.)]?", (text or "").strip())
    if found is None:
        return None
    number = int(found.group(1))
    return LEVELS[number - 1] if 1 <= number <= len(LEVELS) else None


def menu_text(language: str) -> str:
    """The class menu, numbered, a few levels a line: plain GSM-7 text (« é » is in it) that fits in
    two SMS segments."""
    items = [f"{n}) {level}" for n, level in enumerate(LEVELS, 1)]
    rows = "\n".join((", ".join(items[:6]), ", ".join(items[6:10]), ", ".join(items[10:13]),
                      ", ".join(items[13:])))
    if language == "en":
        return (f"Which class are you in? Reply with the number:\n{rows}\n"
                "Or just ask your question. LEVEL changes it later.")
    return (f"Tu es en quelle classe ? Réponds avec le numéro :\n{rows}\n"
            "Ou pose directement ta question. CLASSE pour la changer plus tard.")


async def offer_level_menu(services: Services, db: AsyncSession, user: User, conversation_id: int,
                           now: datetime) -> str:
    """Makes the class menu the conversation's pending menu and notes that it was shown (a
    student is asked once); returns its text. The caller commits."""
    user.level_asked_at = now
    await set_menu(services, conversation_id, LEVEL_MENU_KIND, {"levels": list(LEVELS)},
                   services.settings.learning.session_idle_s, db=db)
    # The tutor does not see the bot's own replies: without this, « je ne sais pas » would reach it
    # out of the blue.
    db.add(Message(conversation_id=conversation_id, role="note", created_at=now, content=(
        "[Class] The student was just sent the class menu (CP1 … Tle, Université, Autre); a number "
        "answers it without you. Not knowing or skipping it is fine; CLASSE (LEVEL) changes it later.")))
    return menu_text(user.language or "fr")
