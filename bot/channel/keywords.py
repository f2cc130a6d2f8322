"""How a one-word command is recognised: the whole message, any case, accents and punctuation aside.

The opt-out words live here, in the core, because the webhook applies STOP the moment it stores the
message (bot.channel.inbound), before the user's earlier messages are answered."""

from __future__ import annotations

import re
import unicodedata

from bot.texts import fr_en


def keyword(text: str) -> str:
    """`  Arrêt ! ` -> `ARRET`; a sentence stays a sentence (and matches no command)."""
    return _keyword(unicodedata.normalize("NFKD", text.strip()))


def _keyword(decomposed: str) -> str:
    plain = decomposed if decomposed.isascii() else "".join(
        ch for ch in decomposed if not unicodedata.combining(ch))
    plain = re.sub(r"[\s.!?,;:…*_~]+$", "", plain)
    plain = re.sub(r"^[\s*_~]+", "", plain)
    return re.sub(r"\s+", " ", plain).upper()


# WhatsApp has no keyword filter of its own, and Twilio's SMS defaults miss the French words.
STOP_WORDS = frozenset({"STOP", "ARRET", "STOPALL", "UNSUBSCRIBE"})
START_WORDS = frozenset({"START", "UNSTOP"})


_LONGEST_STOP = max(map(len, STOP_WORDS))
# More letters or digits than the longest STOP word has. No combining mark is a letter or digit
# (checked over all of Unicode by the tests) and none is stripped: each one stays in the keyword.
ALNUM = r"[^\W_]"
_TOO_MANY_LETTERS = re.compile(rf"(?:[\W_]*{ALNUM}){{{_LONGEST_STOP + 1}}}")


def is_stop(text: str) -> bool:
    # Every webhook asks this of its body: a message of more letters than the longest STOP word is
    # told apart without building its keyword character by character.
    decomposed = unicodedata.normalize("NFKD", text.strip())
    if _TOO_MANY_LETTERS.match(decomposed):
        return False
    return _keyword(decomposed) in STOP_WORDS


def stop_line(language: str) -> str:
    """The footer of every message the bot starts (summaries, reminders, digests): the least the
    rules ask, that STOP ends them (handlers/optout.py: everything stops, on every channel, until
    START, which the STOP confirmation says). At most 20 characters: a parent's weekly summary of
    one child fits one segment with it."""
    return fr_en(language, "STOP pour arrêter", "STOP to end")
