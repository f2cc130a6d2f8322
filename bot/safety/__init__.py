"""Safety first for minors: a child's message that signals distress (self-harm, abuse, violence
against them) is answered first with a caring reply and the helpline of their country, flagged
once for a person to acknowledge, and told by e-mail to the class's teachers and the admins.

Who: every user but the adults, i.e. not a pro (mode or role) and not a parent: a guest who has
not chosen a profile yet may be a child. What: the phrase list (`phrases`) always, and when it
finds nothing, the moderation endpoint (`moderation`) when one is configured. Handlers call
`assess`, then `caring_reply`, `raise_flag` and `notify` (handlers/safety.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from bot.config import Settings
from bot.safety.errors import SafetyError
from bot.safety.flags import EXCERPT_MAX, open_flags, raise_flag
from bot.safety.moderation import moderate, read_result
from bot.safety.notify import Recipients, notify, recipients
from bot.safety.phrases import CATEGORIES, fold, load_phrases
from bot.safety.reply import caring_reply, helpline_of
from bot.services import Services
from bot.storage.models import User

__all__ = ["CATEGORIES", "EXCERPT_MAX", "MODERATION_MIN_WORDS", "Detection", "Recipients", "SafetyError",
           "assess", "caring_reply", "concerned", "fold", "helpline_of", "load_phrases", "moderate", "notify",
           "open_flags", "parent_note", "raise_flag", "read_result", "recipients"]


# Shorter messages (a quiz answer « 2 », OUI, MENU, « merci ») are left to the phrase list: no
# endpoint call, so menus and commands answer as fast as before.
MODERATION_MIN_WORDS = 3


@dataclass(frozen=True)
class Detection:
    category: str  # self_harm | abuse | violence
    source: str  # phrases | moderation


def concerned(user: User) -> bool:
    """Whether this user's messages are looked at: anyone who may be a minor."""
    return user.mode != "pro" and user.role not in ("pro", "parent")


async def assess(services: Services, text: str) -> Detection | None:
    """What the message signals, if anything: the phrase list first (no network, and the child's
    answer leaves sooner), the moderation endpoint for what the list does not know."""
    if not text.strip():
        return None
    category = load_phrases(services.settings.safety.safety_phrases_file).match(text)
    if category is not None:
        return Detection(category, "phrases")
    if len(fold(text).split()) < MODERATION_MIN_WORDS:
        return None
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
