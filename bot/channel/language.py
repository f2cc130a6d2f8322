"""The language a message is written in: French, English, another one, or too little to tell.

A new number's first clear message decides the language it is answered in (handlers/onboarding.py),
over the country's (bot.channel.locale): a +237 number of Douala writing « Hello, can you help me with my
homework? » is answered in English. Only French and English are served; a message in another
language keeps the country's.

py3langid (a maintained fork of langid.py) tells the language offline, its model inside its wheel,
with numpy alone. Restricted to the languages people write to the bot in (LANGUAGES) it is right on
messages of a few words (« c quoi la photosynthèse », « what is photosynthesis »), where over its 97
languages « Hello » reads as Breton; lingua was as good on such texts but its wheel is 96 MB and its
models take seconds and hundreds of MB to load, fastText needs a model fetched at run time. Greetings
and thanks too short for any model (« hi », « merci », « bjr ») are read from two word lists first.
Loading the model takes about two seconds, once per process: callers run `spoken_language` in a
thread.
"""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["LANGUAGES", "spoken_language"]

# What people write to the bot in: French, English, and the other languages of the countries it
# serves that the model knows (Arabic, Portuguese, Spanish, Swahili, Malagasy, Kinyarwanda, Haitian
# Creole, Afrikaans, Zulu, Xhosa) and Europe's (German, Italian, Dutch), so that these are not taken
# for French or English.
LANGUAGES = ("fr", "en", "ar", "pt", "es", "sw", "mg", "rw", "ht", "af", "zu", "xh", "de", "it", "nl")
# Below this, a message is not taken as French or English (the model's normalised probability).
SURE = 0.6
# Words too short or too common in chat for the model, each of one language only.
FRENCH_WORDS = frozenset({
    "bonjour", "bonsoir", "salut", "slt", "bjr", "bsr", "coucou", "merci", "oui", "non", "svp", "stp",
    "aide", "aidez", "moi", "je", "tu", "ça", "ca", "va", "bien", "est", "c'est", "quoi", "comment",
})
ENGLISH_WORDS = frozenset({
    "hello", "hi", "hey", "good", "morning", "evening", "afternoon", "thanks", "thank", "you", "yes",
    "please", "pls", "help", "me", "i", "what", "how", "is", "the", "my",
})


@functools.cache
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier  # numpy and the model: loaded once, late

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(LANGUAGES))
    return identifier


def _from_words(words: list[str]) -> str | None:
    """« fr » or « en » when every word is on one list and some on that one only, else None."""
    french = sum(w in FRENCH_WORDS for w in words)
    english = sum(w in ENGLISH_WORDS for w in words)
    if french + english < len(words) or french == english:
        return None
    return "fr" if french > english else "en"


def spoken_language(text: str) -> str | None:
    """« fr », « en », « other » (another language), or None when `text` says too little (a number,
    an emoji, « ok »)."""
    words = re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", text.lower())
    if not words:
        return None
    listed = _from_words(words)
    if listed is not None:
        return listed
    if sum(len(w) for w in words) < 8:
        return None
    language, probability = _identifier().classify(" ".join(words))
    if probability < SURE:
        return None
    return language if language in ("fr", "en") else "other"
