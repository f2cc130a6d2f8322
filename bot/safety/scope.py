"""A school's tutor keeps to school: a student's request plainly off that scope (the weather,
celebrities, dating, writing code, « act as ChatGPT ») is turned back to schoolwork in one short
message that names the school, with no model call; what is not plain is left to the model, whose
child prompt keeps to school subjects and the bot's own features.

Words first (`scope_examples`): a word of schoolwork (« exercice », « exposé », « maths ») and the
message is answered; a word of what a tutor is not for (« météo », « ma copine », « html »,
« ChatGPT ») lowers the bar its meaning must reach to CUE_FLOOR. The meaning is the distress
check's (`meaning`): the process's multilingual-e5-small
(`bot.e5`) embeds each sentence, a linear classifier over « off » and `none` (in scope) reads it,
its `none` blended with the sentences it learnt from that the message is nearest to. A message is
plainly off scope when each of its sentences is (« aide-moi en maths, et il pleut demain ? » is
answered), at the weights' `threshold`, chosen by cross-validation so that school questions are
almost never turned back (`python -m bench.scope --train`, from `scope_examples.py` and the tune
split of bench/scope/prompts.jsonl; its held-out split measures it).

Only students are scoped (`scoped`): not a guest, a parent or a pro.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bot import e5
from bot.safety.meaning import NONE, Model, load_model, probabilities
from bot.safety.phrases import fold
from bot.safety.scope_examples import OFF_WORDS, SCHOOL_WORDS
from bot.storage.models import User
from bot.texts import fr_en, tutor_of

__all__ = ["CUE_FLOOR", "MIN_WORDS", "OFF", "WEIGHTS_PATH", "cue", "off_probability", "plainly_off",
           "redirect", "scoped"]

WEIGHTS_PATH = Path(__file__).with_name("scope.npz")
OFF = "off"
# « ok », « merci », a quiz's « 2 »: too short to be anything but part of a lesson.
MIN_WORDS = 2
# A word of what a tutor is not for turns a message back when its meaning leans that way at least
# this much: « il pleut » is the weather, « pourquoi il pleut plus à l'équateur » geography.
CUE_FLOOR = 0.25


def scoped(user: User) -> bool:
    """Whether this user's requests are kept to school: a student (the child mode, not a parent)."""
    return user.mode == "child" and user.role != "parent"


def off_probability(text: str, model: Model | None = None) -> float:
    """How surely `text` is off scope: its least off-scope sentence's probability (0 for nothing to
    read). Blocking (the model)."""
    model = model or load_model(WEIGHTS_PATH)
    # The meaning layer's sentences as written: folded (as the distress check reads them) the
    # held-out split's requests were turned back less often (93.3 % against 95.7 %), so a student's
    # message is embedded twice, once per reading (about 15 ms of CPU more).
    found = probabilities(text, model, fold_first=False)
    if found.size == 0:
        return 0.0
    off = 1.0 - found[:, model.classes.index(NONE)]
    return float(np.min(off))


def _says(folded: str, words: frozenset[str]) -> bool:
    padded = f" {folded} "
    return any(f" {word} " in padded for word in words)


def cue(text: str) -> bool | None:
    """What the words alone say: False for a word of schoolwork, else True for a word of what a
    tutor is not for, else None (the meaning decides)."""
    folded = fold(text)
    if _says(folded, SCHOOL_WORDS):
        return False
    return True if _says(folded, OFF_WORDS) else None


def plainly_off(text: str, model: Model | None = None) -> bool:
    """Whether `text` is plainly off a school's scope. Blocking: run it in a thread on the event loop."""
    if len(fold(text).split()) < MIN_WORDS:
        return False
    said = cue(text)
    if said is False or not e5.installed():
        return bool(said)
    model = model or load_model(WEIGHTS_PATH)
    return off_probability(text, model) >= (CUE_FLOOR if said else model.threshold)


def redirect(org_name: str, language: str | None) -> str:
    """The short answer to a request off scope: back to schoolwork, naming the school."""
    tutor = tutor_of(org_name, language)
    return fr_en(
        language,
        f"Je suis {tutor or 'Deblo, ton tuteur'} : je t'aide pour tes cours et tes devoirs (maths, français, "
        "sciences, histoire…), pas pour ça. Pose-moi une question de classe, ou écris MENU.",
        f"I'm {tutor or 'Deblo, your tutor'}: I help with your lessons and homework (maths, French, science, "
        "history…), not with that. Ask me a school question, or send MENU.",
    )
