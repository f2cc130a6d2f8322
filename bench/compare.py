"""What every benchmark shares: its figures as JSON (`--json`) and the side-by-side run against a
past commit (`--baseline REV`, `--baseline-rounds N`).

A benchmark declares its figures once (`FIGURES`: key → Figure, with which direction is better),
calls `add_arguments(parser)`, then `compare(args, "bench.x", FIGURES)` before measuring (it
returns False when no baseline was asked for) and `report("bench.x", FIGURES, values)` after,
when `args.json` is set.

With a baseline, both sides run as subprocesses with the same arguments (`python -m bench.x --json
…`): the current code from this checkout, REV from its cached directory (bench/baseline.py) with
its own interpreter. The sides alternate over the rounds (baseline first in odd rounds, current
first in even ones) so that a slower stretch of a shared machine hits both; each figure is the
median of its rounds, the ratio current / baseline, and the range of the per-round ratios shows
the noise.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import baseline

ROOT = baseline.ROOT
EXIT_UNMEASURABLE = 2  # REV cannot run today's benchmark
EXIT_UNAVAILABLE = 3  # the benchmark cannot run here (an optional package is missing)
JSON_MARK = '{"bench": '
WIDTH = 108


@dataclass(frozen=True)
class Figure:
    label: str
    higher_is_better: bool
    digits: int = 2

    @property
    def better(self) -> str:
        return "higher" if self.higher_is_better else "lower"


Figures = Mapping[str, Figure]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    parser.add_argument("--baseline", metavar="REV",
                        help="also measure commit REV (tag, branch, id) and print both and their ratio")
    parser.add_argument("--baseline-rounds", type=int, default=3, metavar="N",
                        help="alternated rounds of each side with --baseline (default 3)")


def unavailable(bench: str, reason: str) -> None:
    """Says why the benchmark cannot run on this machine, and exits."""
    print(f"{bench} not run: {reason}", file=sys.stderr)
    raise SystemExit(EXIT_UNAVAILABLE)


def report(bench: str, figures: Figures, values: Mapping[str, float]) -> None:
    out = {key: {"label": f.label, "better": f.better, "current": float(values[key])}
           for key, f in figures.items() if key in values}
    print(json.dumps({"bench": bench, "figures": out}), flush=True)


def forwarded(argv: Sequence[str]) -> list[str]:
    """The command line minus --json and the baseline options: what both sides are given."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--baseline", "--baseline-rounds"):
            skip = True
        elif arg != "--json" and not arg.startswith(("--baseline=", "--baseline-rounds=")):
            out.append(arg)
    return out


def parse_output(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(JSON_MARK):
            found: dict[str, Any] = json.loads(line)
            return found
    return None


def reason(stderr: str, returncode: int) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else f"exited with status {returncode} and printed no figures"


@dataclass
class Side:
    name: str
    python: str
    cwd: Path
    rounds: list[dict[str, float]]

    def run(self, bench: str, args: list[str]) -> tuple[dict[str, Any] | None, str]:
        env = {**os.environ, "PYTHONPATH": str(self.cwd)}
        env.pop("VIRTUAL_ENV", None)
        done = subprocess.run([self.python, "-m", bench, "--json", *args], cwd=self.cwd, env=env,
                              capture_output=True, text=True)
        found = parse_output(done.stdout) if done.returncode == 0 else None
        if found is None:
            return None, reason(done.stderr, done.returncode)
        self.rounds.append({k: v["current"] for k, v in found["figures"].items()})
        return found, ""


def ratio(current: float, base: float) -> float | None:
    if base == 0:
        return 1.0 if current == 0 else None
    return current / base


def summary(figures: Figures, current: list[dict[str, float]],
            base: list[dict[str, float]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key, f in figures.items():
        if not all(key in r for r in current + base):
            continue
        cur, old = statistics.median(r[key] for r in current), statistics.median(r[key] for r in base)
        per_round = [x for x in (ratio(c[key], b[key]) for c, b in zip(current, base, strict=True))
                     if x is not None]
        out[key] = {"label": f.label, "better": f.better, "current": cur, "baseline": old,
                    "ratio": ratio(cur, old), "low": min(per_round, default=None),
                    "high": max(per_round, default=None)}
    return out


def fmt(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(rows: dict[str, dict[str, Any]], figures: Figures, rev: str, rounds: int) -> str:
    """Rows current / baseline / ratio, a column per figure, wrapped to WIDTH."""
    names = ["better", "current", f"baseline {rev}", "ratio cur/base"]
    names += ["ratio range"] if rounds > 1 else []
    cells: list[list[str]] = []
    for key, r in rows.items():
        d = figures[key].digits
        column = [r["label"], r["better"], fmt(r["current"], d), fmt(r["baseline"], d), fmt(r["ratio"], 2)]
        if rounds > 1:
            column.append(f"{fmt(r['low'], 2)}-{fmt(r['high'], 2)}")
        cells.append(column)
    first = max(len(n) for n in names) + 2
    blocks: list[list[tuple[list[str], int]]] = []
    block: list[tuple[list[str], int]] = []
    used = first
    for column in cells:
        width = max(len(c) for c in column) + 2
        if block and used + width > WIDTH:
            blocks.append(block)
            block, used = [], first
        block.append((column, width))
        used += width
    if block:
        blocks.append(block)
    lines: list[str] = []
    for b in blocks:
        lines.append(" " * first + "".join(f"{c[0]:>{w}}" for c, w in b))
        for i, name in enumerate(names, start=1):
            lines.append(f"{name:<{first}}" + "".join(f"{c[i]:>{w}}" for c, w in b))
        lines.append("")
    return "\n".join(lines).rstrip()


def fail(message: str, code: int) -> None:
    print(message, file=sys.stderr)
    raise SystemExit(code)


def compare(args: argparse.Namespace, bench: str, figures: Figures,
            argv: Sequence[str] | None = None) -> bool:
    """With --baseline: measures both sides, prints them (a table, or JSON with --json), returns
    True. Without it: returns False, and the caller measures as usual."""
    rev = args.baseline
    if not rev:
        return False
    try:
        sha, revdir = baseline.prepare(rev)
    except baseline.Unmeasurable as e:
        fail(f"{rev} cannot be measured by {bench}: {e}", EXIT_UNMEASURABLE)
    forward = forwarded(sys.argv[1:] if argv is None else argv)
    current = Side("current", sys.executable, ROOT, [])
    base = Side(rev, str(baseline.python(revdir)), revdir, [])
    rounds = max(1, args.baseline_rounds)
    for n in range(rounds):
        for side in (base, current) if n % 2 == 0 else (current, base):
            print(f"{bench}: round {n + 1}/{rounds}, {side.name}", file=sys.stderr, flush=True)
            found, why = side.run(bench, forward)
            if found is None and side is base:
                fail(f"{rev} cannot be measured by {bench}: {why}", EXIT_UNMEASURABLE)
            if found is None:
                fail(f"{bench} failed on the current code: {why}", 1)
    rows = summary(figures, current.rounds, base.rounds)
    if args.json:
        out = {"bench": bench, "rev": rev, "sha": sha, "rounds": rounds, "figures": rows}
        print(json.dumps(out), flush=True)
    else:
        print(f"\n{bench}: current code against {rev} ({sha[:12]}), {rounds} alternated round(s), "
              f"medians; ratio = current / baseline, read with the 'better' row\n")
        print(table(rows, figures, rev, rounds))
    return True
