"""Distress said in words: a French and English phrase list, matched on folded text.

Text is folded before matching: lower case, accents and apostrophes dropped, a letter typed three
times or more kept once, and the spellings of SMS (« jveux », « chui », « mouri », « kms ») written
out. Each phrase is a regular expression over the folded words, with word boundaries, written so
that it needs the child to speak of themselves (« je veux mourir », « il me frappe », « on me
touche ») and not of a topic: « la mort de Louis XVI », « mourir de rire », « le suicide chez
Camus », « il me bat aux échecs » are not distress. A false positive costs a kind message and a
flag a person looks at, never a refusal to teach, so the list leans to catching.

SAFETY_PHRASES_FILE adds the operator's own phrases, one a line: `category: phrase` (self_harm,
abuse or violence), `#` for comments; a phrase is matched as whole words of folded text. A file
that cannot be read is logged and the list of the code still applies.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

__all__ = ["CATEGORIES", "PhraseList", "fold", "load_phrases"]

# Most serious first: a message that says two things is flagged for the first.
CATEGORIES = ("self_harm", "abuse", "violence")

# SMS and chat spellings, word for word, to what the phrases expect.
_SPELLINGS = {
    "jveux": "je veux", "jveu": "je veux", "jvx": "je veux", "jvoudrais": "je voudrais", "vx": "veux",
    "veu": "veux", "mouri": "mourir", "mourrir": "mourir", "mourire": "mourir", "chui": "je suis",
    "chuis": "je suis", "jsuis": "je suis", "jsui": "je suis", "jai": "j ai", "jme": "je me",
    "jmen": "je m en", "frape": "frappe", "frapent": "frappent", "kms": "kill myself",
    "wanna": "want to", "gonna": "going to", "im": "i am", "dont": "do not", "cant": "can not",
    "ptn": "", "tt": "tout", "ds": "dans", "tjr": "toujours", "tjrs": "toujours",
}

_ME = r"(?:je|j)"
_WANT = r"(?:veux|veut|voudrais|vais|prefererais|pense a|ai envie de|a envie de|ai envi de)"
_BUILTIN: dict[str, tuple[str, ...]] = {
    "self_harm": (
        rf"\b{_ME} {_WANT} (?:me )?(?:mourir|crever)\b(?! de (?:rire|faim|froid|chaud|honte|ennui|peur))",
        r"(?<!pas )(?<!plus )\b(?:envie|envi) de (?:mourir|crever)\b(?! de (?:rire|faim|froid|chaud|honte))",
        r"\b(?:me suicid\w*|suicidaire|je pense au suicide|me tuer moi meme)\b",
        rf"\b{_ME} {_WANT} me tuer\b",
        r"\b(?:g|j ai|jai|on a) envie d en finir\b(?! avec (?!la vie|tout|moi))",
        rf"\b{_ME} {_WANT} en finir\b(?! avec (?!la vie|tout|moi))",
        r"\ben finir avec (?:la vie|ma vie)\b",
        r"\b(?:plus|pas|aucune) envie de vivre\b|\bmarre de (?:la vie|vivre)\b",
        r"\bme (?:faire du mal|scarifi\w*|mutil\w*)\b",
        r"\bje me (?:coupe|blesse) (?:expres|les bras|les poignets)\b",
        r"\b(?:kill|killing|hurt|hurting|cut|cutting) myself\b|\bsuicidal\b|\bself harm\w*\b",
        r"\b(?:i|i am|i m) (?:want to|going to|wish i could|wish to) die\b|\bi wish i (?:was|were) dead\b",
        r"\b(?:want to|going to) (?:end my life|end it all|commit suicide)\b|\bend my life\b",
        r"\b(?:do not|don t) want to (?:live|be alive)\b|\bno reason to live\b",
    ),
    "abuse": (
        # « ça me touche (beaucoup) » is being moved, not touched.
        r"(?<!ca )(?<!cela )(?<!tu )(?<!je )\bme touche(?:nt|r)?\b"
        r"(?! (?:le coeur|beaucoup|vraiment|profondement))",
        r"\b(?:touche|touchent|toucher) (?:mes parties|mon sexe|ma poitrine|mes seins|mes fesses)\b",
        r"\battouchements?\b|\babus(?:e|ee|es)? sexuel\w*\b",
        r"\b(?:m a|ma|m ont) (?:viol\w*|abus\w*|force a)\b|\bon me (?:viol\w*|force a)\b",
        r"\b(?:touches|touched|touching|molests|molested|raped|abuses|abused) me\b|\bsexually abused\b",
        r"\b(?:he|she|they) (?:makes|make|made|forces|forced) me (?:touch|undress|take off)\b",
    ),
    "violence": (
        r"(?<!je )(?<!tu )\bme (?:frappe|frappent|frappait|frappaient|tape|tapent|tabasse\w*|fouett\w*|"
        r"brule|brulent)\b(?! sur (?:les nerfs|le systeme))",
        # « il me bat » but not « il me bat (toujours) aux échecs »: beaten at a game.
        r"(?<!je )(?<!tu )\bme (?:bat|battent|battait|battaient)\b(?!(?: \w+)? (?:aux|au|a|en)\b)",
        r"\b(?:menace\w*|veut|veulent|voulait) (?:de )?me tuer\b",
        r"\bje (?:suis|me fais) (?:battue?|frappee?|tabassee?) (?:par|a la maison|tous les jours|chaque)",
        r"\b(?:he|she|they|dad|mom|mum|father|mother|uncle|teacher) (?:hits|hit|beats|beat|kicks|burns) me\b"
        r"(?! (?:at|in|to))",
        r"\bbeats? me up\b|\bthreatens? to kill me\b|\b(?:wants|want) to kill me\b",
    ),
}


def fold(text: str) -> str:
    """The words of `text` as phrases are matched: lower case, no accents, no punctuation, SMS
    spellings written out, one space between words."""
    decomposed = unicodedata.normalize("NFKD", (text or "").lower())
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    bare = re.sub(r"(.)\1{2,}", r"\1", bare)  # « mouriiiir » is « mourir »
    words = re.sub(r"[^a-z0-9]+", " ", bare.replace("œ", "oe")).split()
    return " ".join(w for w in (_SPELLINGS.get(word, word) for word in words) if w)


@dataclass(frozen=True)
class PhraseList:
    """The compiled phrases of each category, the code's and the operator's."""

    patterns: tuple[tuple[str, re.Pattern[str]], ...]

    def match(self, text: str) -> str | None:
        """The category of the first phrase found in `text`, most serious category first."""
        folded = fold(text)
        if not folded:
            return None
        for category, pattern in self.patterns:
            if pattern.search(folded):
                return category
        return None


def _operator_phrases(path: str) -> list[tuple[str, str]]:
    """`category: phrase` lines of SAFETY_PHRASES_FILE, as (category, regex of the folded words)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        log.error("SAFETY_PHRASES_FILE cannot be read; the built-in phrases still apply",
                  extra={"path": path, "error": str(exc)})
        return []
    found = []
    for number, line in enumerate(lines, 1):
        category, _, phrase = line.partition(":")
        category, words = category.strip().lower(), fold(phrase)
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if category not in CATEGORIES or not words:
            log.warning("SAFETY_PHRASES_FILE line skipped: expected `self_harm|abuse|violence: phrase`",
                        extra={"path": path, "line": number})
            continue
        found.append((category, rf"\b{re.escape(words)}\b"))
    return found


_CACHE: dict[tuple[str, float], PhraseList] = {}


def load_phrases(path: str = "") -> PhraseList:
    """The built-in phrases and those of the file at `path` (read again when it changes)."""
    try:
        stamp = Path(path).stat().st_mtime if path else 0.0
    except OSError:
        stamp = -1.0
    key = (path, stamp)
    if key not in _CACHE:
        extra = _operator_phrases(path) if path else []
        ordered = [(c, p) for c in CATEGORIES for p in _BUILTIN[c]]
        ordered += sorted(extra, key=lambda item: CATEGORIES.index(item[0]))
        ordered.sort(key=lambda item: CATEGORIES.index(item[0]))  # stable: the code's first
        _CACHE.clear()
        _CACHE[key] = PhraseList(tuple((c, re.compile(p)) for c, p in ordered))
    return _CACHE[key]
