"""Trains the meaning layer's classifier (bot/safety/meaning.npz) on the example sentences and the
corpus's tune split only, and chooses its threshold by cross-validation on that same data.

    .venv/bin/python -m bench.safety --train

A linear softmax over the e5 embedding (one row per category and `none`), fitted by full-batch
gradient descent with L2 weight decay, the classes weighted to count equally; the training
sentences' vectors are stored beside it for the neighbours `meaning.Model` blends in. The threshold
on P(not none) is the lowest at which the cross-validated false alarms (each held-out sentence read
as `judge` reads a message: sentence by sentence, none under MEANING_MIN_WORDS) stay under
`MAX_FALSE_ALARMS` on look-alikes and `MAX_EVERYDAY_ALARMS` on everyday chat. On school topics a
false alarm costs a kind message and a flag a person reads, a miss a child without the helpline, so
the layer leans to hearing there; on everyday chat, most of what the bot reads, it must stay quiet.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.safety.run import EVERYDAY, Line
from bot import e5
from bot.safety import MEANING_MIN_WORDS, fold
from bot.safety.examples import COUNTER_EXAMPLES, EXAMPLES
from bot.safety.meaning import NONE, WEIGHTS_PATH, Model, readable, sentences

# Cross-validation on the tune split is kinder than new sentences are (the held-out split's look-alikes
# drew about twice as many alarms as cross-validation at the same threshold): the target is half the
# aim of 2 %.
MAX_FALSE_ALARMS = 0.01
# Everyday chat is most of what the bot reads: a false alarm there is paid many times a day (one
# sentence in two hundred of the tune split's, cross-validated).
MAX_EVERYDAY_ALARMS = 0.005
FOLDS = 5
# Which sentences fall in which fold moves the threshold (a few look-alikes near the boundary decide
# it): the folds are drawn several times and the threshold chosen on all the runs together.
REPEATS = 4
L2 = 3e-3
STEPS = 800
RATE = 0.5


def training_set(lines: list[Line]) -> tuple[list[str], list[str], list[bool]]:
    """The texts, their classes, and which are everyday chat."""
    texts = [t for group in EXAMPLES.values() for t in group] + list(COUNTER_EXAMPLES)
    labels = [c for c, group in EXAMPLES.items() for _ in group] + [NONE] * len(COUNTER_EXAMPLES)
    tune = [line for line in lines if line.split == "tune"]
    return (texts + [line.text for line in tune],
            labels + [NONE if line.label == EVERYDAY else line.label for line in tune],
            [False] * len(texts) + [line.label == EVERYDAY for line in tune])


def embed(texts: list[str]) -> np.ndarray:
    return np.vstack([e5.encode(texts[i:i + 32], query=True) for i in range(0, len(texts), 32)])


def fit(x: np.ndarray, y: np.ndarray, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Softmax regression by gradient descent on standardised features, each class weighing as
    much as any other."""
    counts = np.bincount(y, minlength=classes).astype(np.float64)
    sample_weight = (len(y) / (classes * np.maximum(counts, 1)))[y]
    onehot = np.eye(classes)[y]
    w, b = np.zeros((classes, x.shape[1])), np.zeros(classes)
    for _ in range(STEPS):
        logits = x @ w.T + b
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        grad = (p - onehot) * sample_weight[:, None] / len(y)
        w -= RATE * (grad.T @ x + L2 * w)
        b -= RATE * grad.sum(axis=0)
    return w.astype(np.float32), b.astype(np.float32)


def _model(x: np.ndarray, y: np.ndarray, classes: tuple[str, ...], threshold: float) -> Model:
    center, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    w, b = fit((x - center) / scale, y, len(classes))
    return Model(classes, center.astype(np.float32), scale.astype(np.float32), w, b, threshold,
                 x.astype(np.float32), y != classes.index(NONE))


def cross_validated(x: np.ndarray, y: np.ndarray, classes: tuple[str, ...], texts: list[str]) -> np.ndarray:
    """Each row's P(not none) as `judge` gives it (the most worrying of its sentences; none for a
    message too short to be judged) by a model that did not see it, once per split into folds
    (rows: REPEATS runs of all the rows, one after the other)."""
    pieces = [[readable(piece) for piece in sentences(text)] if len(fold(text).split()) >= MEANING_MIN_WORDS
              else [] for text in texts]
    flat = [piece for group in pieces for piece in group]
    vectors = dict(zip(flat, embed(flat), strict=True)) if flat else {}
    rows = [np.vstack([vectors[piece] for piece in group]) if group else None for group in pieces]
    return np.concatenate([_one_run(x, y, classes, rows, seed) for seed in range(7, 7 + REPEATS)])


def _one_run(x: np.ndarray, y: np.ndarray, classes: tuple[str, ...], rows: list[np.ndarray | None],
             seed: int) -> np.ndarray:
    none = classes.index(NONE)
    order = np.random.default_rng(seed).permutation(len(y))
    distress = np.zeros(len(y))
    for fold_number in range(FOLDS):
        held = order[fold_number::FOLDS]
        model = _model(x[np.setdiff1d(order, held)], y[np.setdiff1d(order, held)], classes, 0.5)
        for row in held:
            vectors = rows[row]
            if vectors is not None:
                distress[row] = float((1.0 - model.probabilities(vectors)[:, none]).max())
    return distress


def _under(scores: np.ndarray, rate: float) -> float:
    """The lowest threshold at which at most `rate` of `scores` reach it."""
    ranked = np.sort(scores)[::-1]
    allowed = int(rate * len(ranked))
    return float(ranked[allowed]) + 1e-6 if allowed < len(ranked) else 0.5


def choose_threshold(distress: np.ndarray, is_none: np.ndarray, everyday: np.ndarray) -> float:
    """The lowest threshold whose false alarms stay under MAX_FALSE_ALARMS on the look-alikes and
    under MAX_EVERYDAY_ALARMS on everyday chat."""
    return max(_under(distress[is_none & ~everyday], MAX_FALSE_ALARMS),
               _under(distress[everyday], MAX_EVERYDAY_ALARMS) if everyday.any() else 0.5)


def write_weights(model: Model, path: Path) -> None:
    """The classifier as `meaning.load_model` reads it; the bank as int8 (a unit vector's parts are
    small), a quarter of the size."""
    bank_scale = float(np.abs(model.bank).max()) / 127
    np.savez_compressed(path, classes=np.array(model.classes), center=model.center, scale=model.scale,
                        weights=model.weights, bias=model.bias, threshold=np.float32(model.threshold),
                        bank=np.round(model.bank / bank_scale).astype(np.int8),
                        bank_scale=np.float32(bank_scale), bank_distress=model.bank_distress)


def train(lines: list[Line], path: Path = WEIGHTS_PATH) -> Model:
    texts, labels, chat = training_set(lines)
    classes = (*EXAMPLES, NONE)
    x, y = embed([readable(text) for text in texts]), np.array([classes.index(label) for label in labels])
    distress = cross_validated(x, y, classes, texts)
    labels_again = np.tile(y, REPEATS)
    everyday = np.tile(np.array(chat), REPEATS)
    threshold = choose_threshold(distress, labels_again == classes.index(NONE), everyday)
    recall = float((distress[labels_again != classes.index(NONE)] >= threshold).mean())
    model = _model(x, y, classes, threshold)
    write_weights(model, path)
    print(f"trained on {len(y)} sentences; threshold {threshold:.3f} (cross-validated: recall {recall:.1%} "
          f"at false alarms ≤ {MAX_FALSE_ALARMS:.1%}); written to {path}")
    return model
