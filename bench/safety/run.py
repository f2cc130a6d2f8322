"""The distress detector measured on a labelled corpus of how pupils write.

    .venv/bin/python -m bench.safety [--train] [--layers phrases|all] [--split tune|heldout|both]
                                     [--cv K] [--verbose] [--json]

The corpus (bench/safety/corpus.jsonl): sentences written as pupils write to the bot (standard
French, SMS French, slang, English), each labelled with its category of distress or `none` for the
look-alikes of school life (literature, history, biology, essay topics, « ce devoir me tue »); beside
it bench/safety/everyday.jsonl, what pupils write every day (answers, greetings, requests, commands);
each split into `tune` (what the meaning layer's thresholds were chosen on) and `heldout` (what measures
them). For each split it prints the recall of each category (a distress sentence heard at all: the
child gets the helpline and a person is told whatever the category), how many were heard under their
own category, the false alarms on look-alikes and on everyday chat, and the time per message.
Aims: recall ≥ 95 % on distress, false alarms ≤ 2 %, under 20 ms a message on a 2-core machine.

--split tune measures the tune split alone: a change is judged there (its misses may be read), and
the held-out split is printed only when a change is done, so that it stays a measure and not a guide.

--train fits the meaning layer's classifier again on the examples and the tune split
(bench/safety/train.py) and writes bot/safety/meaning.npz.

--cv K cross-validates the whole detector on the tune data in K grouped folds (bench/safety/cv.py):
the yardstick a change to the detector is judged by, since the held-out split is only read when one
is done.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot.safety import CATEGORIES, hear, load_phrases  # noqa: E402
from bot.safety.meaning import Model  # noqa: E402

CORPUS_PATH = Path(__file__).with_name("corpus.jsonl")
# What pupils write to a tutor every day (answers, greetings, requests, commands, a bad mark): the bulk
# of real traffic, where a false alarm costs most.
EVERYDAY_PATH = Path(__file__).with_name("everyday.jsonl")
EVERYDAY = "everyday"
AIM_RECALL, AIM_FALSE_ALARMS, AIM_MS = 0.95, 0.02, 20.0


@dataclass(frozen=True)
class Line:
    text: str
    label: str  # a category, or none
    style: str
    split: str  # tune | heldout


@dataclass(frozen=True)
class Result:
    split: str
    recall: dict[str, tuple[int, int, int]]  # category -> (heard, heard as itself, total)
    false_alarms: tuple[int, int]  # on the look-alikes
    everyday_alarms: tuple[int, int]
    missed: list[str]
    alarms: list[str]
    ms_per_message: float
    # The process's own CPU time: what a message costs when other work shares the cores (the wall
    # time above then counts the waiting too).
    cpu_ms_per_message: float

    @property
    def distress_recall(self) -> float:
        heard = sum(h for h, _, _ in self.recall.values())
        return heard / max(1, sum(t for _, _, t in self.recall.values()))

    @property
    def false_alarm_rate(self) -> float:
        return self.false_alarms[0] / max(1, self.false_alarms[1])

    @property
    def everyday_alarm_rate(self) -> float:
        return self.everyday_alarms[0] / max(1, self.everyday_alarms[1])


def load_corpus(path: Path = CORPUS_PATH, everyday: Path = EVERYDAY_PATH) -> list[Line]:
    """The labelled corpus, and the everyday chat (label `everyday`: never distress)."""
    lines = [json.loads(raw) for raw in path.read_text(encoding="utf-8").splitlines() if raw.strip()]
    chat = [json.loads(raw) for raw in everyday.read_text(encoding="utf-8").splitlines() if raw.strip()]
    return ([Line(d["text"], d["label"], d["style"], d["split"]) for d in lines]
            + [Line(d["text"], EVERYDAY, d["style"], d["split"]) for d in chat])


def measure(lines: list[Line], split: str, *, meaning: bool = True, phrases_only: bool = False,
            model: Model | None = None) -> Result:
    """Every line of `split` through the local layers, as `bot.safety.assess` runs them (the meaning
    read by `model`, else by the bundled weights)."""
    phrases = load_phrases()
    chosen = [line for line in lines if line.split == split]
    # The first load is not a message's cost.
    hear("échauffement du modèle", phrases, meaning=meaning, model=model)
    tally: dict[str, list[int]] = {c: [0, 0, 0] for c in CATEGORIES}
    alarms, missed, looks, chat, chat_alarms = [], [], 0, 0, 0
    start, cpu = time.perf_counter(), time.process_time()
    for line in chosen:
        found = phrases.match(line.text) if phrases_only else hear(line.text, phrases, meaning=meaning,
                                                                   model=model)
        category = found if isinstance(found, str) or found is None else found.category
        if line.label in ("none", EVERYDAY):
            everyday = line.label == EVERYDAY
            looks, chat = looks + (not everyday), chat + everyday
            chat_alarms += everyday and category is not None
            if category is not None:
                alarms.append(f"{category}: {line.text}")
            continue
        counts = tally[line.label]
        counts[2] += 1
        counts[0] += category is not None
        counts[1] += category == line.label
        if category is None:
            missed.append(f"{line.label}: {line.text}")
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    recall = {c: (h, own, t) for c, (h, own, t) in tally.items()}
    return Result(split, recall, (len(alarms) - chat_alarms, looks), (chat_alarms, chat), missed, alarms,
                  1000 * elapsed / max(1, len(chosen)), 1000 * cpu / max(1, len(chosen)))


def print_result(result: Result, verbose: bool) -> None:
    print(f"\n{result.split}: {result.ms_per_message:.1f} ms a message "
          f"({result.cpu_ms_per_message:.1f} ms of CPU)")
    print(f"{'category':<18}{'recall':>8}{'as itself':>11}{'lines':>7}")
    for category, (heard, own, total) in result.recall.items():
        if total:
            print(f"{category:<18}{heard / total:>8.0%}{own / total:>11.0%}{total:>7}")
    if any(total for _, _, total in result.recall.values()):
        print(f"{'all distress':<18}{result.distress_recall:>8.1%}")
    alarms, looks = result.false_alarms
    print(f"{'false alarms':<18}{result.false_alarm_rate:>8.1%}{'':>11}{looks:>7}  ({alarms} flagged)")
    chat_alarms, chat = result.everyday_alarms
    rate = result.everyday_alarm_rate
    print(f"{'on everyday chat':<18}{rate:>8.1%}{'':>11}{chat:>7}  ({chat_alarms} flagged)")
    if verbose:
        for text in result.missed:
            print(f"  missed  {text}")
        for text in result.alarms:
            print(f"  alarm   {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", action="store_true", help="fit the meaning layer again, then measure")
    parser.add_argument("--layers", choices=("phrases", "all"), default="all")
    parser.add_argument("--split", choices=("tune", "heldout", "both"), default="both",
                        help="which split to measure (judge a change on tune alone)")
    parser.add_argument("--cv", type=int, metavar="K", default=0,
                        help="cross-validate on the tune data in K grouped folds (and measure nothing else)")
    parser.add_argument("--verbose", action="store_true", help="list what was missed and the false alarms")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    lines = load_corpus()
    counts = Counter((line.split, line.label in ("none", EVERYDAY)) for line in lines)
    print(f"corpus: {len(lines)} lines; tune {counts[('tune', False)]} distress + {counts[('tune', True)]} "
          f"look-alikes and everyday chat, held out {counts[('heldout', False)]} + "
          f"{counts[('heldout', True)]}")
    if args.train:
        from bench.safety.train import train

        train(lines)
    if args.cv:
        from bench.safety.cv import cross_validate

        results = [cross_validate(lines, args.cv)]
    else:
        # A split with no line (the held-out one between two corpora) has nothing to print.
        results = [measure(lines, split, meaning=args.layers != "phrases",
                           phrases_only=args.layers == "phrases")
                   for split in ("tune", "heldout")
                   if args.split in (split, "both") and any(line.split == split for line in lines)]
    for result in results:
        print_result(result, args.verbose)
    if args.json:
        print(json.dumps({r.split: {"recall": r.distress_recall, "false_alarms": r.false_alarm_rate,
                                    "everyday_alarms": r.everyday_alarm_rate,
                                    "ms_per_message": r.ms_per_message,
                                    "cpu_ms_per_message": r.cpu_ms_per_message}
                          for r in results}))
    print(f"\naims: recall ≥ {AIM_RECALL:.0%}, false alarms ≤ {AIM_FALSE_ALARMS:.0%}, "
          f"≤ {AIM_MS:.0f} ms a message")
