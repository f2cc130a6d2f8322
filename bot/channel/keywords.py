"""How a one-word command is recognised: the whole message, any case, accents and punctuation aside.

The opt-out words live here, in the core, because the webhook applies STOP the moment it stores the
message (bot.channel.inbound), before the user's earlier messages are answered."""

from __future__ import annotations

import re
import unicodedata


def keyword(text: str) -> str:
    """`  Arrêt ! ` -> `ARRET`; a sentence stays a sentence (and matches no command)."""
    decomposed = unicodedata.normalize("NFKD", text.strip())
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    plain = re.sub(r"[\s.!?,;:…*_~]+$", "", plain)
    plain = re.sub(r"^[\s*_~]+", "", plain)
    return re.sub(r"\s+", " ", plain).upper()


# WhatsApp has no keyword filter of its own, and Twilio's SMS defaults miss the French words.
STOP_WORDS = frozenset({"STOP", "ARRET", "STOPALL", "UNSUBSCRIBE"})
START_WORDS = frozenset({"START", "UNSTOP"})


def is_stop(text: str) -> bool:
    return keyword(text) in STOP_WORDS
