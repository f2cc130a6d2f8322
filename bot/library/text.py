"""Keyword text of the library, the same on SQLite and PostgreSQL: accents folded, French words
stemmed (Snowball), stop words dropped, all in Python. The database indexes the result as plain
words (FTS5 unicode61, PostgreSQL 'simple'), so both backends match the same chunks."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import snowballstemmer  # type: ignore[import-untyped]  # ships no type information

__all__ = ["STOP_WORDS", "fold", "keyword_terms", "name_terms", "word_spans"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)  # FTS5 and PostgreSQL split at "_" too
_LIGATURES = str.maketrans({"œ": "oe", "æ": "ae", "ß": "ss"})

# Folded (no accents). French articles, pronouns, prepositions, auxiliaries; the elided letters
# (l', d', qu'); a few English ones, for the users who write in English.
STOP_WORDS = frozenset("""
a afin ai aie aient ait alors as au aucun aupres aussi autre aux avaient avais avait avec avez
avoir avons c ce ceci cela celle celles celui ces cet cette ceux chaque chez ci comme comment d
dans de des donc dont du elle elles en encore entre es est et etaient etais etait ete etre eu
eux fait faire fais il ils j je jusqu l la le les leur leurs lui m ma mais me meme memes mes moi
mon n ne ni nos notre nous on ont ou par pas peu peut plus pour pourquoi qu quand que quel quelle
quelles quels qui s sa sans se ses si son sont sous suis sur t ta te tes toi ton tous tout toute
toutes tres tu un une unes uns vers voici voila vos votre vous y
an and are by for from how in is it of on or the this to what which with
""".split())


def fold(word: str) -> str:
    """Lower case without accents: « École » → « ecole »."""
    decomposed = unicodedata.normalize("NFKD", word.casefold().translate(_LIGATURES))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


_STEMMER = snowballstemmer.stemmer("french")


@lru_cache(maxsize=65536)
def _term(word: str) -> str:
    """The indexed form of one word ("" for a stop word). Stemmed before folding: the French
    Snowball rules read the accents (« états » and « etats » both give « etat »)."""
    lowered = word.casefold().translate(_LIGATURES)
    folded = fold(lowered)
    if folded in STOP_WORDS or (len(folded) == 1 and not folded.isdigit()):
        return ""
    if folded.isdigit():
        return folded
    return fold(_STEMMER.stemWord(lowered))


def keyword_terms(text: str) -> list[str]:
    """The words of `text` as indexed, in order (stop words left out)."""
    return [t for t in (_term(w) for w in _WORD.findall(text or "")) if t]


def name_terms(name: str) -> list[str]:
    """The words of a file's name as indexed (its extension left out, « _ » read as a space)."""
    return keyword_terms(name.rsplit(".", 1)[0].replace("_", " "))


def word_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, indexed form) of each word of `text`, stop words with an empty form."""
    return [(m.start(), m.end(), _term(m.group())) for m in _WORD.finditer(text or "")]
