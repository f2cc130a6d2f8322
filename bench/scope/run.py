"""The scope check of a school's tutor measured on prompts written as pupils write.

    .venv/bin/python -m bench.scope [--train] [--verbose] [--json]

The prompts (bench/scope/prompts.jsonl): requests off a school's scope (`off`: the weather,
celebrities, dating, writing code, « act as ChatGPT », sport results, games, money, gossip) and in
it (`in`: maths, French, history, geography, science, English, philosophy, the bot's own features
such as quiz, REVISION, progress, reminders and files, the look-alikes a tutor answers such as « c'est
quoi la météorologie », and the thanks and « je comprends pas » of a lesson), in French and English,
with typos, no accents and SMS spelling; each split into `tune` (what the weights and the threshold
were fitted on) and `heldout` (what measures them). For each split it prints the share of off-scope
requests turned back with no model call, the share of in-scope ones answered, and the time per message.
Aims on the held-out split: ≥ 95 % turned back, ≥ 98 % answered.

--train fits the classifier again on the examples and the tune split (bench/scope/train.py) and
writes bot/safety/scope.npz.
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

from bot import e5  # noqa: E402
from bot.safety import MEANING_MIN_WORDS  # noqa: E402
from bot.safety.meaning import judge  # noqa: E402
from bot.safety.phrases import fold  # noqa: E402
from bot.safety.scope import OFF, plainly_off  # noqa: E402

PROMPTS_PATH = Path(__file__).with_name("prompts.jsonl")
AIM_REDIRECTED, AIM_ANSWERED = 0.95, 0.98


@dataclass(frozen=True)
class Prompt:
    text: str
    label: str  # off | in
    topic: str  # weather, celebrity, … ; maths, french, … , features, ambiguous, chat
    lang: str  # fr | en
    split: str  # tune | heldout


@dataclass(frozen=True)
class Result:
    split: str
    redirected: tuple[int, int]  # off-scope prompts turned back, of all off-scope
    answered: tuple[int, int]  # in-scope prompts let through to the tutor, of all in-scope
    let_through: list[str]  # off scope, not turned back (the prompt keeps them to school)
    turned_back: list[str]  # in scope, wrongly turned back
    ms_per_message: float
    cpu_ms_per_message: float

    @property
    def redirect_rate(self) -> float:
        return self.redirected[0] / max(1, self.redirected[1])

    @property
    def answer_rate(self) -> float:
        return self.answered[0] / max(1, self.answered[1])


def load_prompts(path: Path = PROMPTS_PATH) -> list[Prompt]:
    rows = [json.loads(raw) for raw in path.read_text(encoding="utf-8").splitlines() if raw.strip()]
    return [Prompt(r["text"], r["label"], r["topic"], r["lang"], r["split"]) for r in rows]


def measure(prompts: list[Prompt], split: str) -> Result:
    """Every prompt of `split` through the check, as handlers/scope.py runs it."""
    chosen = [p for p in prompts if p.split == split]
    plainly_off("échauffement du modèle")  # the first load is not a message's cost
    e5.forget()  # each prompt embedded as a new message is
    let_through, turned_back, off, answered = [], [], 0, 0
    start, cpu = time.perf_counter(), time.process_time()
    for prompt in chosen:
        judged_off = plainly_off(prompt.text)
        if prompt.label == OFF:
            off += judged_off
            if not judged_off:
                let_through.append(f"{prompt.topic}: {prompt.text}")
        else:
            answered += not judged_off
            if judged_off:
                turned_back.append(f"{prompt.topic}: {prompt.text}")
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    counts = Counter(p.label for p in chosen)
    return Result(split, (off, counts[OFF]), (answered, counts["in"]), let_through, turned_back,
                  1000 * elapsed / max(1, len(chosen)), 1000 * cpu / max(1, len(chosen)))


def message_ms(prompts: list[Prompt], split: str) -> float:
    """Milliseconds of CPU a student's message of `split` takes through both checks that read its meaning,
    distress then scope (handlers/safety.py, then handlers/scope.py)."""
    chosen = [p.text for p in prompts if p.split == split]
    e5.forget()
    try:
        start = time.process_time()  # the machine's other work is not the message's
        for text in chosen:
            if len(fold(text).split()) >= MEANING_MIN_WORDS:
                judge(text)
            plainly_off(text)
        return 1000 * (time.process_time() - start) / max(1, len(chosen))
    finally:
        e5.forget()


def print_result(result: Result, verbose: bool) -> None:
    print(f"\n{result.split}: {result.ms_per_message:.1f} ms a message "
          f"({result.cpu_ms_per_message:.1f} ms of CPU)")
    print(f"{'':<28}{'rate':>8}{'of':>6}")
    print(f"{'off scope turned back':<28}{result.redirect_rate:>8.1%}{result.redirected[1]:>6}")
    print(f"{'in scope answered':<28}{result.answer_rate:>8.1%}{result.answered[1]:>6}")
    if verbose:
        for text in result.let_through:
            print(f"  let through  {text}")
        for text in result.turned_back:
            print(f"  turned back  {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--train", action="store_true", help="fit the classifier again, then measure")
    parser.add_argument("--verbose", action="store_true", help="list the prompts each side got wrong")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    prompts = load_prompts()
    counts = Counter((p.split, p.label) for p in prompts)
    print(f"prompts: {len(prompts)}; tune {counts[('tune', OFF)]} off scope + {counts[('tune', 'in')]} in "
          f"scope, held out {counts[('heldout', OFF)]} + {counts[('heldout', 'in')]}")
    if args.train:
        from bench.scope.train import train

        train(prompts)
    results = [measure(prompts, split) for split in ("tune", "heldout")]
    for result in results:
        print_result(result, args.verbose)
    # The two checks read a message differently (the distress check folded, the scope check as
    # written), so each embeds it: e5's recent encodings spare only a text read again.
    cost = message_ms(prompts, "heldout")
    print(f"\na student's message, distress then scope check (held out): {cost:.1f} ms of CPU")
    if args.json:
        print(json.dumps({r.split: {"redirected": r.redirect_rate, "answered": r.answer_rate,
                                    "ms_per_message": r.ms_per_message,
                                    "cpu_ms_per_message": r.cpu_ms_per_message} for r in results}
                         | {"message_ms": cost}))
    print(f"\naims (held out): off scope turned back ≥ {AIM_REDIRECTED:.0%}, in scope answered "
          f"≥ {AIM_ANSWERED:.0%}")
