"""The school levels of francophone West Africa, as a student names them, and the class menu.

A level is stored as written here (« 4e », « Tle »): the prompt shows `User.school_level` as is.
The menu is numbered text (bot.channel.menus); a student may also type the level itself
(« 4e », « 4ème », « terminale »), which is read by `parse_level` wherever a level is asked.

On WhatsApp the same message also carries a list (bot.channel.buttons), but a list holds 10 items
and there are 15 levels: its items are the cycles (Primaire, Collège, Lycée) and the two levels of
their own (Université, Autre). A tapped cycle is answered with a second menu, its levels, each
carrying its number in the whole list (6e is 7 in both), so the typed numbers of the whole list
keep their meaning whichever message is on screen. The cycles' numbers (91…) are above any level's
and only a tap gives them: a typed « 91 » is a number out of range, as before. The second menu
keeps the first one's id, so the first list's items stay valid until a level is chosen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession
from unidecode import unidecode

from bot.channel.buttons import Menu
from bot.channel.menus import set_menu
from bot.services import Services
from bot.storage.models import Message, User
from bot.texts import fr_en

LEVELS = ("CP1", "CP2", "CE1", "CE2", "CM1", "CM2", "6e", "5e", "4e", "3e", "2nde", "1re", "Tle",
          "Université", "Autre")
LEVEL_MENU_KIND = "level"



@dataclass(frozen=True)
class Cycle:
    """A school cycle, an item of the first list; `number` is what a tap on it gives back."""

    number: int
    fr: str
    en: str
    levels: tuple[str, ...]


CYCLES = (Cycle(91, "Primaire", "Primary school", LEVELS[0:6]),
          Cycle(92, "Collège", "Middle school", LEVELS[6:10]),
          Cycle(93, "Lycée", "High school", LEVELS[10:13]))
# The first list's last items: levels of their own, under their number in the whole list.
_OWN = ((14, "Université", "University", "Études supérieures", "Higher education"),
        (15, "Autre", "Other", "Autre formation, ou pas à l'école", "Other training, or not at school"))

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


# A section after a level: a series (« D », « A2 ») or a class number (« 3 »), the shortest first
# (« 1ère A2 ») then the longest (« 6e3 »).
_SECTIONS = tuple(re.compile(rf"^(.*{lazy})[\s\-_/]*(?:s[ée]rie\s*)?(?:[a-z]\d?|\d{{1,2}})$", re.IGNORECASE)
                  for lazy in ("?", ""))


def _level_alone(text: str) -> str | None:
    key = re.sub(r"^(?:de|en|in|la|le) ", "", _key(text))  # « en 4e », « de 3ème »
    return _BY_KEY.get(key) or _BY_KEY.get(key.replace(" ", ""))


def parse_level(text: str) -> str | None:
    """The level a person's words name, a class section after it dropped (« 4ème » → « 4e »,
    « cm 2 » → « CM2 », « Terminale D » and « Tle C » → « Tle », « 6ème 3 » → « 6e »), else None.
    The one parser of levels: a student's answer, CLASSE, `users set-level`, class lists and the
    teachers' items files."""
    level = _level_alone(text)
    for section in _SECTIONS:
        found = section.match(text.strip()) if level is None else None
        level = _level_alone(found.group(1)) if found and found.group(1) else level
    return level


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


def cycle_by_number(text: str) -> Cycle | None:
    """The cycle a tap's number names (« 92 » → Collège), else None."""
    return next((c for c in CYCLES if (text or "").strip() == str(c.number)), None)


def level_menu(language: str, menu_id: str) -> Menu:
    """The class menu: the whole numbered text, and the cycles as a list's items."""
    options = [fr_en(language, c.fr, c.en) for c in CYCLES] + [fr_en(language, o[1], o[2]) for o in _OWN]
    details = [", ".join(c.levels) for c in CYCLES] + [fr_en(language, o[3], o[4]) for o in _OWN]
    return Menu(menu_id=menu_id, body=menu_text(language), options=tuple(options), language=language,
                numbers=tuple(c.number for c in CYCLES) + tuple(o[0] for o in _OWN),
                descriptions=tuple(details))


def cycle_menu(cycle: Cycle, language: str, menu_id: str) -> Menu:
    """A cycle's levels, each under its number in the whole list (Collège: 7) 6e … 10) 3e)."""
    numbers = tuple(LEVELS.index(level) + 1 for level in cycle.levels)
    rows = ", ".join(f"{n}) {level}" for n, level in zip(numbers, cycle.levels, strict=True))
    if language == "en":
        body = f"{cycle.en}: which class? Tap it, or reply with its number:\n{rows}"
    else:
        body = f"{cycle.fr} : quelle classe ? Touche-la, ou réponds avec son numéro :\n{rows}"
    return Menu(menu_id=menu_id, body=body, options=cycle.levels, language=language, numbers=numbers)


async def offer_cycle(services: Services, db: AsyncSession, conversation_id: int, menu_id: str,
                      cycle: Cycle, language: str) -> Menu:
    """The second step of the class menu, pending under the same id. The caller commits."""
    await set_menu(services, conversation_id, LEVEL_MENU_KIND, {"levels": list(LEVELS), "cycle": cycle.fr},
                   services.settings.learning.session_idle_s, db=db, menu_id=menu_id)
    return cycle_menu(cycle, language, menu_id)


async def offer_level_menu(services: Services, db: AsyncSession, user: User, conversation_id: int,
                           now: datetime) -> Menu:
    """Makes the class menu the conversation's pending menu and notes that it was shown (a
    student is asked once); returns it. The caller commits."""
    user.level_asked_at = now
    menu_id = await set_menu(services, conversation_id, LEVEL_MENU_KIND, {"levels": list(LEVELS)},
                             services.settings.learning.session_idle_s, db=db)
    # The tutor does not see the bot's own replies: without this, « je ne sais pas » would reach it
    # out of the blue.
    db.add(Message(conversation_id=conversation_id, role="note", created_at=now, content=(
        "[Class] The student was just sent the class menu (CP1 … Tle, Université, Autre); a number "
        "answers it without you. Not knowing or skipping it is fine; CLASSE (LEVEL) changes it later.")))
    return level_menu(user.language or "fr", menu_id)
