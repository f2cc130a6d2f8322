"""`--baseline REV` (bench/compare.py, bench/baseline.py) on a tiny run of bench.webhook: both rows
and their ratio are printed, REV's prepared directory is reused by the next call, and a REV that
cannot run today's benchmark ends with status 2 and says why. Figures are not asserted: times are
the machine's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--no-postgres", "--rounds", "1", "--requests", "40", "--seconds", "0.2", "--probes", "5",
        "--flood", "0", "--users", "5", "--baseline-rounds", "1"]


def bench(module: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=110)


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def row(stdout: str, name: str) -> list[str]:
    found = [line for line in stdout.splitlines() if line.startswith(name)]
    assert found, f"no {name!r} row in:\n{stdout}"
    return found[0].removeprefix(name).split()


def test_baseline_prints_both_rows_and_their_ratio_and_reuses_the_prepared_commit(tmp_path: Path) -> None:
    env = {"DEBLO_BENCH_CACHE": str(tmp_path / "cache")}
    first = bench("bench.webhook", ["--baseline", "HEAD", *TINY], env)
    assert first.returncode == 0, first.stderr
    current, base, ratio = (row(first.stdout, n) for n in ("current", "baseline HEAD", "ratio cur/base"))
    assert len(current) == len(base) == len(ratio) > 0
    assert all(float(cell) > 0 for cell in ratio)
    assert "preparing HEAD" in first.stderr
    marker = tmp_path / "cache" / git("rev-parse", "HEAD") / ".deblo-bench-ready"
    made = marker.stat().st_mtime_ns

    second = bench("bench.webhook", ["--baseline", "HEAD", *TINY], env)
    assert second.returncode == 0, second.stderr
    assert "preparing" not in second.stderr
    assert marker.stat().st_mtime_ns == made
    row(second.stdout, "ratio cur/base")


def test_a_commit_that_cannot_run_todays_benchmark_exits_2_and_says_why(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git("clone", "--quiet", "--shared", str(ROOT), str(clone))
    git("rm", "-rq", "bot", cwd=clone)
    git("-c", "user.name=Bench", "-c", "user.email=bench@example.invalid", "commit", "-qm", "no product",
        cwd=clone)
    env = {"DEBLO_BENCH_CACHE": str(tmp_path / "cache"), "DEBLO_BENCH_REPO": str(clone)}

    done = bench("bench.cost", ["--baseline", "HEAD"], env)
    assert done.returncode == 2, done.stderr
    assert "HEAD cannot be measured by bench.cost: ModuleNotFoundError: No module named 'bot'" in done.stderr

    unknown = bench("bench.cost", ["--baseline", "no-such-revision"], env)
    assert unknown.returncode == 2
    assert "no-such-revision cannot be measured by bench.cost: no commit" in unknown.stderr


def test_a_release_name_is_found_in_the_list_when_the_checkout_has_no_such_tag(tmp_path: Path) -> None:
    from bench import baseline

    listed = tmp_path / "releases.txt"
    head = git("rev-parse", "HEAD")
    listed.write_text(f"# name commit what\nv9.9-untagged {head[:10]} a release with no tag here\n")
    assert baseline.releases(listed) == {"v9.9-untagged": head[:10]}
    assert baseline.resolve("v9.9-untagged", listed) == head
    assert baseline.resolve("HEAD", listed) == head  # what git knows comes first
    with pytest.raises(baseline.Unmeasurable, match=r"no commit 'v9\.8'"):
        baseline.resolve("v9.8", listed)
    # Every release the project lists is a commit of its history.
    for name, commit in baseline.releases().items():
        assert baseline.resolve(name) == git("rev-parse", commit), name
