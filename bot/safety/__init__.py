"""Safety first for minors: a child's message that signals distress (self-harm, abuse, violence
against them) is answered first with a caring reply and the helpline of their country, flagged
once for a person to acknowledge, and told by e-mail to the class's teachers and the admins.

Who: every user but the adults, i.e. not a pro (mode or role) and not a parent: a guest who has
not chosen a profile yet may be a child. What: in layers, all local by default: the phrase list
(`phrases`) on the folded text, then the message's meaning against examples of each category
(`meaning`, the local e5 model), then the moderation endpoint (`moderation`) when one is
configured. Handlers call `assess`, then `caring_reply`, `raise_flag` and `notify` (handlers/safety.py).
A flag left open is sent again to the admins (`escalation`, a periodic job); the teachers' weekly
e-mail and the dashboard show how many are open and since when (`open_among`, `open_line`).

A school's tutor keeps students to school (`scope`): a request plainly off it (the weather,
celebrities, dating, code, « act as ChatGPT ») is turned back with no model call
(handlers/scope.py: `scoped`, `plainly_off_scope`, `scope_redirect`).

Then a person follows up (`hold`): an operator allowed to reads the child's messages on the flag's
page, writes to the child through the bot's number and holds the conversation meanwhile
(handlers/hold.py keeps the tutor quiet).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from bot import e5
from bot.config import Settings
from bot.safety.errors import SafetyError
from bot.safety.escalation import escalate_open_flags, escalation_jobs
from bot.safety.flags import (
    EXCERPT_MAX,
    GENTLE,
    GENTLE_S,
    OpenFlags,
    gentle,
    how_long,
    open_among,
    open_flags,
    open_line,
    raise_flag,
)
from bot.safety.hold import (
    REPLY_MAX,
    Person,
    Written,
    held_flag,
    hold_live,
    hold_notice,
    may_write,
    record,
    release,
    take,
    write_to_child,
)
from bot.safety.meaning import Model, judge
from bot.safety.moderation import moderate, read_result
from bot.safety.notify import Recipients, notify, recipients
from bot.safety.phrases import CATEGORIES, PhraseList, fold, load_phrases
from bot.safety.phrases import label as category_label
from bot.safety.reply import caring_reply, helpline_of
from bot.safety.scope import plainly_off as plainly_off_scope
from bot.safety.scope import redirect as scope_redirect
from bot.safety.scope import scoped
from bot.services import Services
from bot.storage.models import User

__all__ = ["CATEGORIES", "EXCERPT_MAX", "GENTLE", "GENTLE_S", "MEANING_MIN_WORDS", "MODERATION_MIN_WORDS",
           "REPLY_MAX", "Detection", "OpenFlags", "Person", "Recipients", "SafetyError", "Written",
           "assess", "caring_reply", "category_label", "concerned", "escalate_open_flags",
           "escalation_jobs", "fold", "gentle", "hear", "held_flag", "helpline_of", "hold_live",
           "hold_notice", "how_long", "load_phrases", "may_write", "moderate", "notify", "open_among",
           "open_flags", "open_line", "parent_note", "plainly_off_scope", "raise_flag", "read_result",
           "recipients", "record", "release", "scope_redirect", "scoped", "take", "write_to_child"]


# Shorter messages (a quiz answer « 2 », OUI, MENU, « merci ») are left to the phrase list: no
# endpoint call, so menus and commands answer as fast as before.
MODERATION_MIN_WORDS = 3
# The same for the meaning layer: « personne ne m'aime » is three words.
MEANING_MIN_WORDS = 3


@dataclass(frozen=True)
class Detection:
    category: str  # one of CATEGORIES
    source: str  # phrases | meaning | moderation


def concerned(user: User) -> bool:
    """Whether this user's messages are looked at: anyone who may be a minor."""
    return user.mode != "pro" and user.role not in ("pro", "parent")


def hear(text: str, phrases: PhraseList, *, meaning: bool = True,
         model: Model | None = None) -> Detection | None:
    """What the local layers hear in `text`: the phrase list, then the meaning (`model`, else the
    bundled weights: the bench's cross-validation passes the one each fold trained). Blocking (the
    model): `assess` runs it in a thread."""
    category = phrases.match(text)
    if category is not None:
        return Detection(category, "phrases")
    if meaning and e5.installed() and len(fold(text).split()) >= MEANING_MIN_WORDS:
        category = judge(text, model)
        if category is not None:
            return Detection(category, "meaning")
    return None


async def assess(services: Services, text: str) -> Detection | None:
    """What the message signals, if anything: the local layers first (no network, and the child's
    answer leaves sooner), the moderation endpoint for what they do not know."""
    if not text.strip():
        return None
    safety = services.settings.safety
    phrases = load_phrases(safety.safety_phrases_file)
    found = await asyncio.to_thread(hear, text, phrases, meaning=safety.safety_meaning)
    if found is not None or len(fold(text).split()) < MODERATION_MIN_WORDS:
        return found
    category = await moderate(services, text)
    return Detection(category, "moderation") if category is not None else None


async def parent_note(db: AsyncSession, settings: Settings, student_id: int, language: str) -> str:
    """The line a parent's ENFANTS shows about open flags: nothing unless SAFETY_TELL_PARENTS."""
    if not settings.safety.safety_tell_parents or not await open_flags(db, student_id):
        return ""
    if language == "en":
        return ("A message from your child worried us; the school's team has been told and will "
                "contact you.")
    return ("Un message de votre enfant nous a inquiétés ; l'équipe de l'école est prévenue et vous "
            "contactera.")
