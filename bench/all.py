"""Every benchmark in one run, one table: `scripts/bench-all [--baseline REV] [--quick] [--only a,b]`.

Runs bench.webhook, bench.loop, bench.scale, bench.files and bench.cost one after the other, each
with --json (and --baseline REV when given: bench/compare.py), and prints one table of bench,
figure, which direction is better, current, baseline and ratio. A benchmark that cannot run (an
optional package missing, REV unable to run it, PostgreSQL or Redis absent) is listed as not run
with its reason; the others still run. --quick runs each on small sizes: a smoke check of the
comparison, whose ratios are noisier.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from typing import Any

from bench.compare import EXIT_UNAVAILABLE, EXIT_UNMEASURABLE, ROOT, fmt, parse_output, reason

BENCHES = ("webhook", "loop", "scale", "files", "cost")
QUICK = {
    "webhook": ["--rounds", "1", "--requests", "300", "--seconds", "1", "--probes", "20", "--flood", "2"],
    "loop": ["--turns", "5", "--rounds", "2", "--conversations", "50"],
    "scale": ["--rate", "4", "--seconds", "4", "--users", "20", "--warmup", "1", "--workers", "1,2",
              "--llm-latency", "0.3"],
    "files": ["--repeat", "1"],
    "cost": [],
}


def run_one(name: str, args: argparse.Namespace) -> tuple[dict[str, Any] | None, str]:
    cmd = [sys.executable, "-m", f"bench.{name}", "--json", *(QUICK[name] if args.quick else [])]
    if args.baseline:
        cmd += ["--baseline", args.baseline, "--baseline-rounds", str(args.rounds)]
    print(f"== bench.{name}: {' '.join(cmd[3:])}", file=sys.stderr, flush=True)
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    found = parse_output(done.stdout) if done.returncode == 0 else None
    if found is None:
        why = reason(done.stderr, done.returncode).removeprefix(f"bench.{name} not run: ")
        kind = {EXIT_UNAVAILABLE: "unavailable", EXIT_UNMEASURABLE: "baseline unmeasurable"}.get(
            done.returncode, f"failed (status {done.returncode})")
        return None, f"{kind}: {why}"
    return found, ""


def table(results: dict[str, dict[str, Any]], baseline: str | None) -> str:
    head = ["bench", "figure", "better", "current"] + (["baseline", "ratio", "range"] if baseline else [])
    lines = [head]
    for name, found in results.items():
        for r in found["figures"].values():
            line = [name, r["label"], r["better"], fmt(r["current"], 3)]
            if baseline:
                line += [fmt(r["baseline"], 3), fmt(r["ratio"], 2),
                         f"{fmt(r['low'], 2)}-{fmt(r['high'], 2)}" if found["rounds"] > 1 else ""]
            lines.append(line)
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) if i < 3 else c.rjust(w)
                     for i, (c, w) in enumerate(zip(line, widths, strict=True))) for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench-all", description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", metavar="REV", help="also measure commit REV beside the current code")
    parser.add_argument("--rounds", type=int,
                        help="alternated rounds per side with --baseline (3; 2 with --quick)")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--only", type=lambda s: [x.strip().removeprefix("bench.") for x in s.split(",")],
                        default=list(BENCHES), help="comma-separated benchmarks (default: all)")
    args = parser.parse_args()
    args.rounds = args.rounds or (2 if args.quick else 3)
    unknown = [n for n in args.only if n not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)} (known: {', '.join(BENCHES)})")
    results: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for name in args.only:
        found, why = run_one(name, args)
        if found is None:
            skipped[name] = why
        else:
            results[name] = found
    title = f"current code against {args.baseline}" if args.baseline else "current code"
    if args.baseline and results:
        found = next(iter(results.values()))
        title += f" ({found['sha'][:12]}), {found['rounds']} alternated round(s) per side, medians"
    print(f"\nAll benchmarks{' (quick sizes)' if args.quick else ''}: {title}\n")
    if results:
        print(table(results, args.baseline))
    for name, why in skipped.items():
        print(f"\nbench.{name} not run: {why}")
    crashed = [n for n, why in skipped.items() if why.startswith("failed")]
    return 1 if crashed else 0


if __name__ == "__main__":
    raise SystemExit(main())
