"""The one rule for a text said in two languages: French first, English for whoever chose English.

Every package may import it (it is part of the base). A user's `language` is "fr", "en" or None
(not chosen yet); anything but "en" reads as French.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def fr_en(language: str | None, fr: T, en: T) -> T:
    """`en` for an English speaker, else `fr` (the default language, also for None)."""
    return en if language == "en" else fr


def tutor_of(org_name: str, language: str | None) -> str:
    """« Deblo, le tuteur de <école> »: how the bot names itself as the school's own service (ORG_NAME);
    "" when no school is set (doctor FAILs then)."""
    org = " ".join(org_name.split())
    if not org:
        return ""
    return fr_en(language, f"Deblo, le tuteur de {org}", f"Deblo, the tutor of {org}")
