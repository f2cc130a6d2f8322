"""`--shard K/N` (tests/conftest.py), by which scripts/test runs each backend in several processes:
the shares of a run are disjoint, together they are the whole run, and a bad share is refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def collected(*args: str) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
         "--backend", "sqlite", "tests/tasks", *args],
        cwd=ROOT, capture_output=True, text=True, check=False)
    return done.returncode, [line for line in done.stdout.splitlines() if "::" in line]


def test_the_shares_of_a_run_are_disjoint_and_make_the_whole_run() -> None:
    code, whole = collected()
    assert code == 0 and whole
    shares = [collected("--shard", f"{k}/2") for k in (1, 2)]
    assert all(code == 0 and tests for code, tests in shares)
    tests = [test for _, share in shares for test in share]
    assert sorted(tests) == sorted(whole)  # each test once
    modules = [{test.split("::")[0] for test in share} for _, share in shares]
    assert not modules[0] & modules[1]  # a module's tests stay in one process


def test_a_bad_share_is_refused_by_name() -> None:
    for bad in ("3/2", "half"):
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only", "--shard", bad,
             "tests/tasks"], cwd=ROOT, capture_output=True, text=True, check=False)
        assert done.returncode == 4 and f"--shard {bad}" in done.stderr, (bad, done.stderr)
