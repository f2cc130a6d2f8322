"""Trains the meaning layer's classifier (bot/safety/meaning.npz) on the example sentences and the
corpus's tune split only, and chooses its threshold by cross-validation on that same data.

    .venv/bin/python -m bench.safety --train

A linear softmax over the e5 embedding (one row per category and `none`), fitted by full-batch
gradient descent with L2 weight decay, the classes weighted to count equally; the training
sentences' vectors are stored beside it for the neighbours `meaning.Model` blends in. The
cross-validation keeps near-twins (`twins`: e5 cosine ≥ SAME) in one fold. Each category
has its own bar on P(not none), for the sentences read as it (`choose_bars`): lowered one distress
sentence at a time where that costs the fewest cross-validated false alarms (each held-out sentence
read as `judge` reads a message: sentence by sentence, none under MEANING_MIN_WORDS), while they
stay under `MAX_FALSE_ALARMS` on look-alikes and `MAX_EVERYDAY_ALARMS` on everyday chat; the single
threshold those budgets allow is kept beside them. On school topics a
false alarm costs a kind message and a flag a person reads, a miss a child without the helpline, so
the layer leans to hearing there; on everyday chat, most of what the bot reads, it must stay quiet.
"""

from __future__ import annotations

from dataclasses import replace
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
# No category's bar goes under this: a sentence is heard only when its meaning is clearly more
# distress than school life.
BAR_FLOOR = 0.6
L2 = 3e-3
# Two sentences at least this close (e5 cosine, both folded) are the same sentence written twice.
SAME = 0.95
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


# The vectors already computed in this process: cross-validation trains on the same sentences once
# per fold.
_VECTORS: dict[str, np.ndarray] = {}


def embed(texts: list[str]) -> np.ndarray:
    new = list(dict.fromkeys(text for text in texts if text not in _VECTORS))
    for i in range(0, len(new), 32):
        _VECTORS.update(zip(new[i:i + 32], e5.encode(new[i:i + 32], query=True), strict=True))
    return np.vstack([_VECTORS[text] for text in texts])


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


def cross_validated(x: np.ndarray, y: np.ndarray, classes: tuple[str, ...],
                    texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's P(not none) as `judge` gives it (the most worrying of its sentences; none for a
    message too short to be judged) and the category that sentence is read as, by a model that did
    not see it, once per split into folds (rows: REPEATS runs of all the rows, one after the other)."""
    pieces = [[readable(piece) for piece in sentences(text)] if len(fold(text).split()) >= MEANING_MIN_WORDS
              else [] for text in texts]
    flat = [piece for group in pieces for piece in group]
    vectors = dict(zip(flat, embed(flat), strict=True)) if flat else {}
    rows = [np.vstack([vectors[piece] for piece in group]) if group else None for group in pieces]
    group = twins(x)
    runs = [_one_run(x, y, classes, rows, group, seed) for seed in range(7, 7 + REPEATS)]
    return np.concatenate([d for d, _ in runs]), np.concatenate([c for _, c in runs])


def twins(vectors: np.ndarray) -> np.ndarray:
    """Each row's group: rows whose vectors are at cosine ≥ SAME (one sentence written twice, a
    spelling or a word changed), and the rows those are twins of, share one, so that a fold never
    judges a sentence by a model that learnt its twin."""
    parent = np.arange(len(vectors))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = int(parent[i])
        return i

    for i, j in zip(*np.nonzero(np.triu(vectors @ vectors.T >= SAME, 1)), strict=True):
        parent[root(int(i))] = root(int(j))
    return np.array([root(i) for i in range(len(vectors))])


def _one_run(x: np.ndarray, y: np.ndarray, classes: tuple[str, ...], rows: list[np.ndarray | None],
             group: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    none = classes.index(NONE)
    # Whole groups to each fold, in a seeded order.
    order = np.random.default_rng(seed).permutation(np.unique(group))
    fold_of_group = np.zeros(len(y), int)
    fold_of_group[order] = np.arange(len(order)) % FOLDS
    fold_of = fold_of_group[group]
    distress, read_as = np.zeros(len(y)), np.full(len(y), none)
    for fold_number in range(FOLDS):
        held = np.nonzero(fold_of == fold_number)[0]
        kept = np.nonzero(fold_of != fold_number)[0]
        model = _model(x[kept], y[kept], classes, 0.5)
        for row in held:
            vectors = rows[row]
            if vectors is not None:
                found = model.probabilities(vectors)
                worst = int(np.argmax(1.0 - found[:, none]))
                distress[row] = 1.0 - float(found[worst, none])
                read_as[row] = int(np.argmax(np.where(np.arange(len(classes)) == none, -1.0, found[worst])))
    return distress, read_as


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


def choose_bars(distress: np.ndarray, read_as: np.ndarray, labels: np.ndarray, everyday: np.ndarray,
                none: int, floor: float) -> np.ndarray:
    """A threshold per category, under the same false-alarm budget as `choose_threshold`'s single
    one: from no sentence heard, the category whose next distress sentence costs the fewest new
    false alarms has its bar lowered to it, until the budget is spent (never below `floor`)."""
    looks, chat = (labels == none) & ~everyday, everyday
    budget = (int(MAX_FALSE_ALARMS * looks.sum()), int(MAX_EVERYDAY_ALARMS * chat.sum()))
    bars = np.ones(none + 1)  # `none` is the last class; its bar stays unused
    spent = [0, 0]
    while True:
        best: tuple[float, int, float, int, int] | None = None
        for category in range(none):
            step = _next_step(distress, read_as == category, labels != none, looks, chat, bars[category],
                              floor)
            if step is None:
                continue
            bar, gain, cost_looks, cost_chat = step
            if spent[0] + cost_looks > budget[0] or spent[1] + cost_chat > budget[1]:
                continue
            price = (cost_looks + cost_chat) / gain
            if best is None or price < best[0]:
                best = (price, category, bar, cost_looks, cost_chat)
        if best is None:
            return bars.astype(np.float32)
        _, category, bars[category], cost_looks, cost_chat = best
        spent = [spent[0] + cost_looks, spent[1] + cost_chat]


def _next_step(distress: np.ndarray, mine: np.ndarray, is_distress: np.ndarray, looks: np.ndarray,
               chat: np.ndarray, bar: float, floor: float) -> tuple[float, int, int, int] | None:
    """Lowering one category's bar to its next distress sentence not yet heard: the new bar, the
    sentences gained, and the look-alikes and chat it newly hears; None when there is none above
    `floor`."""
    below = mine & (distress < bar) & (distress >= floor)
    waiting = distress[below & is_distress]
    if not waiting.size:
        return None
    new = float(waiting.max())
    newly = below & (distress >= new)
    return new, int((newly & is_distress).sum()), int((newly & looks).sum()), int((newly & chat).sum())


def write_weights(model: Model, path: Path) -> None:
    """The classifier as `meaning.load_model` reads it; the bank as int8 (a unit vector's parts are
    small), a quarter of the size."""
    bank_scale = float(np.abs(model.bank).max()) / 127
    bars = model.bars if model.bars is not None else np.full(len(model.classes), model.threshold, np.float32)
    np.savez_compressed(path, classes=np.array(model.classes), center=model.center, scale=model.scale,
                        weights=model.weights, bias=model.bias, threshold=np.float32(model.threshold),
                        bank=np.round(model.bank / bank_scale).astype(np.int8),
                        bank_scale=np.float32(bank_scale), bank_distress=model.bank_distress, bars=bars)


def fit_meaning(lines: list[Line], *, quiet: bool = False) -> Model:
    """The classifier and its bars, from the examples and the tune lines of `lines`."""
    texts, labels, chat = training_set(lines)
    classes = (*EXAMPLES, NONE)
    x, y = embed([readable(text) for text in texts]), np.array([classes.index(label) for label in labels])
    distress, read_as = cross_validated(x, y, classes, texts)
    labels_again, none = np.tile(y, REPEATS), classes.index(NONE)
    everyday = np.tile(np.array(chat), REPEATS)
    threshold = choose_threshold(distress, labels_again == none, everyday)
    bars = choose_bars(distress, read_as, labels_again, everyday, none, BAR_FLOOR)
    heard = distress >= bars[read_as]
    recall = float(heard[labels_again != none].mean())
    if not quiet:
        print(f"trained on {len(y)} sentences; one threshold {threshold:.3f}, per category "
              + ", ".join(f"{c} {b:.3f}" for c, b in zip(classes, bars, strict=True) if c != NONE)
              + f" (cross-validated: recall {recall:.1%} at false alarms ≤ {MAX_FALSE_ALARMS:.1%})")
    return replace(_model(x, y, classes, threshold), bars=bars)


def train(lines: list[Line], path: Path = WEIGHTS_PATH) -> Model:
    model = fit_meaning(lines)
    write_weights(model, path)
    print(f"written to {path}")
    return model
