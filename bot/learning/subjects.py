"""One canonical list of school subjects, with the names students and the model use for them, and
the skill key of a topic: « Maths » and « Mathématiques » are one subject, « Les Fractions » and
« fraction » one skill."""

from __future__ import annotations

import re

from unidecode import unidecode

SUBJECTS = (
    "Mathématiques", "Français", "SVT", "Physique-Chimie", "Histoire-Géographie", "Anglais",
    "Philosophie", "EDHC", "Informatique", "Autre",
)
OTHER = "Autre"

_ALIASES = {
    "Mathématiques": ("maths", "math", "mathematique", "algebre", "geometrie", "calcul", "mathematics"),
    "Français": ("francais", "french", "grammaire", "orthographe", "conjugaison", "litterature"),
    "SVT": ("sciences de la vie et de la terre", "biologie", "sciences naturelles", "biology"),
    "Physique-Chimie": ("physique chimie", "physique", "chimie", "pc", "physics", "chemistry"),
    "Histoire-Géographie": ("histoire geographie", "histoire geo", "histoire", "geographie", "hg",
                            "history", "geography"),
    "Anglais": ("english", "anglais lv1"),
    "Philosophie": ("philo", "philosophy"),
    "EDHC": ("education civique", "education aux droits de l homme et a la citoyennete", "ecm",
             "civic education"),
    "Informatique": ("tic", "computer science", "computing", "programmation"),
    "Autre": ("other",),
}


def _key(text: str) -> str:
    """Lower case, no accents, words separated by one space."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", unidecode(text).lower()).split())


_BY_KEY = {_key(alias): name for name, aliases in _ALIASES.items() for alias in (name, *aliases)}


def known_subject(text: str) -> str | None:
    """The canonical subject a name stands for, or None when it is not one we know."""
    return _BY_KEY.get(_key(text or ""))


def canonical_subject(text: str) -> str:
    return known_subject(text) or OTHER


def skill_key(topic: str) -> str:
    """The skill a topic names: case, accents and spaces ignored, and a plural « s » dropped
    (« Les Fractions » → « les fraction »)."""
    words = _key(topic or "").split()
    return " ".join(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words)


def skill_label(topic: str) -> str:
    """The topic as written, to show (« les fractions »), spaces tidied, at most 200 characters."""
    return " ".join((topic or "").split())[:200]
