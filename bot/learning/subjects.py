"""One canonical list of school subjects, with the names students and the model use for them, and
the skill key of a topic: « Maths » and « Mathématiques » are one subject, « Les Fractions » and
« fraction » one skill.

The list is the francophone West African secondary programme (collège and lycée, general and
technical): a name none of them is counts under « Autre ».

A skill key is the topic folded so that the ways one skill is written meet: case, accents and
punctuation ignored, articles and elisions dropped (« le théorème de Pythagore » and « Théorème de
Pythagore » are « theoreme pythagore »), plurals folded (« Les fractions » is « fraction »,
« réseaux » is « reseau »). Keys that differ in their words but not in their meaning (« pythagore »)
are merged by bot.learning.skills."""

from __future__ import annotations

import re

from unidecode import unidecode

SUBJECTS = (
    "Mathématiques", "Français", "SVT", "Physique-Chimie", "Histoire-Géographie", "Anglais",
    "Philosophie", "EDHC", "Informatique", "Espagnol", "Allemand", "Arabe", "Latin", "Économie",
    "SES", "Comptabilité", "Lecture", "Éducation musicale", "Arts plastiques", "EPS", "Autre",
)
OTHER = "Autre"

_ALIASES = {
    "Mathématiques": ("maths", "math", "mathematique", "algebre", "geometrie", "calcul", "mathematics"),
    "Français": ("francais", "french", "grammaire", "orthographe", "conjugaison", "litterature",
                 "expression ecrite", "redaction"),
    "SVT": ("sciences de la vie et de la terre", "biologie", "sciences naturelles", "biology",
            "sciences de la vie", "geologie"),
    "Physique-Chimie": ("physique chimie", "physique", "chimie", "pc", "physics", "chemistry",
                        "sciences physiques", "spct"),
    "Histoire-Géographie": ("histoire geographie", "histoire geo", "histoire", "geographie", "hg",
                            "history", "geography"),
    "Anglais": ("english", "anglais lv1", "lv1 anglais"),
    "Philosophie": ("philo", "philosophy"),
    "EDHC": ("education civique", "education aux droits de l homme et a la citoyennete", "ecm",
             "civic education", "education civique et morale", "instruction civique"),
    "Informatique": ("tic", "computer science", "computing", "programmation", "ict"),
    "Espagnol": ("spanish", "espanol", "esp", "lv2 espagnol", "espagnol lv2"),
    "Allemand": ("german", "deutsch", "lv2 allemand", "allemand lv2"),
    "Arabe": ("arabic", "langue arabe", "lv2 arabe", "arabe lv2"),
    "Latin": ("latin grec", "langues anciennes", "latin and greek"),
    "Économie": ("economie", "economics", "eco", "economie generale", "sciences economiques"),
    "SES": ("sciences economiques et sociales", "economic and social sciences"),
    "Comptabilité": ("comptabilite", "compta", "accounting", "comptabilite generale",
                     "techniques comptables"),
    "Lecture": ("reading", "lecture suivie", "lecture expliquee", "lecture methodique"),
    "Éducation musicale": ("musique", "music", "em", "chant"),
    "Arts plastiques": ("dessin", "art", "arts", "ap", "art plastique", "drawing",
                        "arts visuels", "visual arts"),
    "EPS": ("education physique et sportive", "education physique", "sport", "physical education", "pe",
            "ep"),
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


# Words that never tell one skill from another: articles and elisions (« l' », « d' » are « l », « d »
# once the apostrophe is a space), « de » of « de la » and « théorème de », English's « the », « an »
# and « 's », the words that join a skill's words (« à », « sur », « chez », « et », Spanish's « y »), and the
# words that name the kind of lesson rather than its skill (« théorème de Pythagore », « loi d'Ohm »,
# « calcul de dérivées », « conjugaison du passé simple »).
_DROPPED = frozenset({
    "le", "la", "les", "l", "du", "des", "de", "d", "un", "une", "the", "an", "s",
    "a", "au", "aux", "en", "sur", "avec", "dans", "pour", "chez", "of", "on", "in", "with", "about",
    "et", "ou", "and", "or", "y",
    "theoreme", "theorem", "loi", "law", "notion", "lecon", "lesson", "cours", "chapitre", "chapter",
    "exercice", "exercise", "regle", "rule", "calcul", "conjugaison", "propriete", "revision",
    "introduction", "intro",
})
# Ordinals written as words or figures (« 1er degré », « premier degré »; « 2nde », « deuxième »).
_ORDINALS = {
    **dict.fromkeys(("1er", "1ere", "1re", "premier", "premiere", "first", "1st"), "1"),
    **dict.fromkeys(("2nd", "2nde", "2de", "2e", "2eme", "second", "seconde", "deuxieme", "2ieme"), "2"),
    **dict.fromkeys(("3e", "3eme", "3ieme", "troisieme", "third", "3rd"), "3"),
}
# Plurals in x, most specific first: « réseaux » → « reseau », « noyaux » → « noyau », « jeux » → « jeu »,
# « genoux » → « genou », « signaux » → « signal ».
_PLURAL_X = (("eaux", "eau"), ("yaux", "yau"), ("eux", "eu"), ("oux", "ou"), ("aux", "al"))


def _singular(word: str) -> str:
    """The word with a plural folded. A singular that looks plural (« temps », « virus ») folds the
    same way as its plural, which is all a key needs."""
    if len(word) <= 3 or word.isdigit():
        return word  # « bus », « cas », « 10 »
    for plural, single in _PLURAL_X:
        if word.endswith(plural):
            return word[: -len(plural)] + single
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def skill_key(topic: str) -> str:
    """The skill a topic names: case, accents, punctuation, articles, elisions and the kind of lesson
    ignored, ordinals and plurals folded (« Les Fractions » → « fraction »; « le théorème de
    Pythagore » → « pythagore »; « équations du 1er degré » → « equation 1 degre »). A topic of such
    words only keeps them (« La » → « la »)."""
    words = _key(topic or "").split()
    kept = [w for w in words if w not in _DROPPED and _singular(w) not in _DROPPED] or words
    return " ".join(_ORDINALS.get(w) or _singular(w) for w in kept)


def skill_label(topic: str) -> str:
    """The topic as written, to show (« les fractions »), spaces tidied, at most 200 characters."""
    return " ".join((topic or "").split())[:200]
