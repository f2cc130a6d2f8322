"""Trains the scope check's classifier (bot/safety/scope.npz) on the example sentences and the
prompts' tune split only, and chooses its threshold by cross-validation on that same data.

    .venv/bin/python -m bench.scope --train

The same classifier as the distress check's meaning layer (bench/safety/train.py: a linear softmax
over the e5 embedding, here over « off » and `none`, with the training sentences' vectors kept for
the neighbours). The threshold on P(off) is the lowest at which the cross-validated school
questions turned back stay under MAX_IN_SCOPE_REDIRECTS: a pupil whose question is refused learns
less and trusts the tutor less, while a request off scope let through is still kept to school by
the prompt.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.safety.train import embed, fit, write_weights
from bench.scope.run import Prompt
from bot.safety.meaning import NONE, Model, sentences
from bot.safety.phrases import fold
from bot.safety.scope import MIN_WORDS, OFF, WEIGHTS_PATH, cue
from bot.safety.scope_examples import IN_SCOPE, OFF_SCOPE

CLASSES = (OFF, NONE)
# Under the aim (≤ 2 % of school questions turned back), with room: new sentences fare worse than
# cross-validation. Weights fitted on the example sentences alone and measured on the tune split
# still answered over 99 % of its school questions at 2 %, and turned back a sixth more of its
# requests off scope by their meaning alone than at 1 %.
MAX_IN_SCOPE_REDIRECTS = 0.015
FOLDS = 5


def training_set(prompts: list[Prompt]) -> tuple[list[str], np.ndarray]:
    tune = [p for p in prompts if p.split == "tune"]
    texts = [*OFF_SCOPE, *IN_SCOPE, *(p.text for p in tune)]
    off = [True] * len(OFF_SCOPE) + [False] * len(IN_SCOPE) + [p.label == OFF for p in tune]
    return texts, np.array([0 if o else 1 for o in off])


def _model(x: np.ndarray, y: np.ndarray, threshold: float) -> Model:
    center, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    w, b = fit((x - center) / scale, y, len(CLASSES))
    return Model(CLASSES, center.astype(np.float32), scale.astype(np.float32), w, b, threshold,
                 x.astype(np.float32), y == 0)


def cross_validated(x: np.ndarray, y: np.ndarray, texts: list[str]) -> np.ndarray:
    """Each row's P(off) as `scope.off_probability` gives it (its least off-scope sentence; 0 for a
    message too short to be read) by a model that did not see it."""
    pieces = [sentences(t) if len(fold(t).split()) >= MIN_WORDS else [] for t in texts]
    flat = sorted({piece for group in pieces for piece in group})
    vectors = dict(zip(flat, embed(flat), strict=True)) if flat else {}
    order = np.random.default_rng(7).permutation(len(y))
    off = np.zeros(len(y))
    for number in range(FOLDS):
        held = order[number::FOLDS]
        kept = np.setdiff1d(order, held)
        model = _model(x[kept], y[kept], 0.5)
        for row in held:
            if pieces[row]:
                found = model.probabilities(np.vstack([vectors[p] for p in pieces[row]]))
                off[row] = float((1.0 - found[:, 1]).min())
    return off


def choose_threshold(off: np.ndarray, in_scope: np.ndarray) -> float:
    """The lowest threshold at which at most MAX_IN_SCOPE_REDIRECTS of the school questions reach it."""
    ranked = np.sort(off[in_scope])[::-1]
    allowed = int(MAX_IN_SCOPE_REDIRECTS * len(ranked))
    return float(ranked[allowed]) + 1e-6 if allowed < len(ranked) else 0.5


def train(prompts: list[Prompt], path: Path = WEIGHTS_PATH) -> Model:
    texts, y = training_set(prompts)
    x = embed(texts)
    off = cross_validated(x, y, texts)
    # The meaning decides only where the words say nothing: the threshold is chosen there.
    silent = np.array([cue(text) is None for text in texts])
    threshold = choose_threshold(off, (y == 1) & silent)
    recall = float((off[(y == 0) & silent] >= threshold).mean())
    model = _model(x, y, threshold)
    write_weights(model, path)
    print(f"trained on {len(y)} sentences; threshold {threshold:.3f} (cross-validated: {recall:.1%} of "
          f"requests off scope turned back where the words say nothing, at most "
          f"{MAX_IN_SCOPE_REDIRECTS:.1%} of school ones); "
          f"written to {path}")
    return model
