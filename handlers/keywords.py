"""How a one-word command is recognised: the whole message, any case, accents and punctuation aside."""

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
