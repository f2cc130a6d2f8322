"""The distress detector cross-validated on the data it may be tuned on.

    .venv/bin/python -m bench.safety --cv 5 [--verbose]

The tune lines (the corpus's and everyday chat's) are cut into k folds; for each fold the meaning
layer is trained exactly as `--train` trains it (`train.fit_meaning`: the example sentences of
bot/safety/examples*.py always in, the bars chosen by its own inner cross-validation) on the other
k − 1, and the fold is read through the same layers the bot runs (`bot.safety.hear`: the phrases,
then the meaning with that fold's model). The table adds up every fold: recall per category, false
alarms on look-alikes and on everyday chat, milliseconds a message.

The folds are grouped: sentences that say nearly the same thing (their e5 vectors, folded as the
classifier reads them, at cosine ≥ `train.SAME`) fall in the same fold, so that a sentence is never judged
by a model that learnt its twin. A held-out split, when the corpus has one, is left out entirely.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np

from bench.safety.run import Line, Result, measure
from bench.safety.train import embed, fit_meaning, twins
from bot.safety.meaning import readable

__all__ = ["cross_validate", "folds", "groups"]

SEED = 11


def groups(texts: list[str]) -> np.ndarray:
    """Each text's group of near-twins (`train.twins`)."""
    return twins(embed([readable(text) for text in texts]))


def folds(labels: list[str], group: np.ndarray, k: int, seed: int = SEED) -> np.ndarray:
    """Each row's fold: whole groups, drawn in a seeded order, each to the fold that holds fewest of
    its first row's label so far (every category spread evenly)."""
    fold = np.full(len(labels), -1)
    held: list[Counter[str]] = [Counter() for _ in range(k)]
    for g in np.random.default_rng(seed).permutation(np.unique(group)):
        rows = np.nonzero(group == g)[0]
        label = labels[int(rows[0])]
        chosen = min(range(k), key=lambda f: (held[f][label], sum(held[f].values())))
        fold[rows] = chosen
        held[chosen][label] += len(rows)
    return fold


def cross_validate(lines: list[Line], k: int, seed: int = SEED) -> Result:
    """Every tune line read by a model trained without its fold, all folds added up."""
    tune = [line for line in lines if line.split == "tune"]
    group = groups([line.text for line in tune])
    fold = folds([line.label for line in tune], group, k, seed)
    print(f"cross-validation: {len(tune)} tune lines in {len(set(group))} groups, {k} folds")
    results = []
    for number in range(k):
        train_on = [line for line, f in zip(tune, fold, strict=True) if f != number]
        held = [replace(line, split="cv") for line, f in zip(tune, fold, strict=True) if f == number]
        model = fit_meaning(train_on, quiet=True)
        results.append(measure(held, "cv", model=model))
        print(f"  fold {number + 1}: recall {results[-1].distress_recall:.1%}, "
              f"false alarms {results[-1].false_alarm_rate:.1%}", flush=True)
    return _added(results, f"cross-validated ({k} folds)")


def _added(results: list[Result], name: str) -> Result:
    """The folds' results as one."""
    recall = {c: (sum(r.recall[c][0] for r in results), sum(r.recall[c][1] for r in results),
                  sum(r.recall[c][2] for r in results)) for c in results[0].recall}
    weights = [sum(t for _, _, t in r.recall.values()) + r.false_alarms[1] + r.everyday_alarms[1]
               for r in results]
    return Result(name, recall,
                  (sum(r.false_alarms[0] for r in results), sum(r.false_alarms[1] for r in results)),
                  (sum(r.everyday_alarms[0] for r in results), sum(r.everyday_alarms[1] for r in results)),
                  [m for r in results for m in r.missed], [a for r in results for a in r.alarms],
                  _mean([r.ms_per_message for r in results], weights),
                  _mean([r.cpu_ms_per_message for r in results], weights))


def _mean(values: list[float], weights: list[int]) -> float:
    return sum(v * w for v, w in zip(values, weights, strict=True)) / max(1, sum(weights))
