"""The one error every `cohorts …` command gives for a class that is not there (exit code 1), in
the operator's language."""

from __future__ import annotations

import sys

from bot.texts import fr_en

__all__ = ["no_class"]


def no_class(language: str, name: str) -> int:
    print(fr_en(language, f"erreur : aucune classe nommée {name!r} (cohorts list les montre)",
                f"error: no class named {name!r} (cohorts list shows them)"), file=sys.stderr)
    return 1
