"""A past commit made runnable beside the current code, for `--baseline REV` (bench/compare.py).

`prepare(REV)` extracts `git archive REV` into `$DEBLO_BENCH_CACHE/<full sha>/` (default
`~/.cache/deblo-bench/`) with a virtual environment of its own, kept from one run to the next:

- a light one when REV's requirements/test.txt is the same as today's (or REV has none): no
  packages of its own, a .pth file pointing at the current environment's site-packages, so the
  same library versions are measured and only the product code differs;
- else a full one: `pip install --no-deps --require-hashes -r requirements/test.txt`, then the project
  itself with `--no-deps -e .`.

A marker file, written once the environment is complete, says which kind it is; a directory
without it (an interrupted setup) or with another kind is built again. Today's bench/,
tests/fakes/ and tests/support/ are then copied over REV's own, so both sides run the same
measuring code against different product code. REV is looked up in this checkout's repository,
or in the one DEBLO_BENCH_REPO names; a release name of bench/releases.txt (v0.7) is found there
even in a copy made without its tags.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = ".deblo-bench-ready"
SHARED = ("bench", "tests/fakes", "tests/support")
LOCK = "requirements/test.txt"
RELEASES = ROOT / "bench" / "releases.txt"


class Unmeasurable(Exception):
    """REV cannot be made ready: unknown revision, failed extraction or installation."""


def repository() -> Path:
    return Path(os.environ.get("DEBLO_BENCH_REPO") or ROOT)


def cache_root() -> Path:
    configured = os.environ.get("DEBLO_BENCH_CACHE")
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "deblo-bench"


def releases(path: Path = RELEASES) -> dict[str, str]:
    """The release names of bench/releases.txt and their commits."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return {parts[0]: parts[1] for parts in (line.split() for line in lines)
            if len(parts) >= 2 and not parts[0].startswith("#")}


def resolve(rev: str, release_list: Path = RELEASES) -> str:
    """REV's full commit id in the repository: a revision git knows, else a release's listed commit
    (a checkout made without its tags still compares with the last release by name)."""
    for candidate in (rev, releases(release_list).get(rev)):
        if candidate is None:
            continue
        found = subprocess.run(["git", "-C", str(repository()), "rev-parse", "--verify", "--quiet",
                                f"{candidate}^{{commit}}"], capture_output=True, text=True)
        if found.returncode == 0 and found.stdout.strip():
            return found.stdout.strip()
    raise Unmeasurable(f"no commit {rev!r} in {repository()}")


def python(revdir: Path) -> Path:
    return revdir / ".venv" / "bin" / "python"


def _environment_kind(revdir: Path) -> str:
    """What the marker must say: a light environment over today's packages, or a full one for
    REV's own lock (named by its hash)."""
    theirs, ours = revdir / LOCK, ROOT / LOCK
    if not theirs.exists() or (ours.exists() and theirs.read_bytes() == ours.read_bytes()):
        return "light " + os.pathsep.join(site.getsitepackages())
    return "full " + hashlib.sha256(theirs.read_bytes()).hexdigest()


def _extract(sha: str, revdir: Path) -> None:
    revdir.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(repository()), "archive", "--format=tar", sha],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert archive.stdout is not None
    untar = subprocess.run(["tar", "-x", "-C", str(revdir)], stdin=archive.stdout, capture_output=True)
    archive.stdout.close()
    archive_err = archive.stderr.read() if archive.stderr else b""
    if archive.wait() != 0 or untar.returncode != 0:
        raise Unmeasurable(f"git archive {sha[:12]} failed: {(archive_err or untar.stderr).decode().strip()}")


def _run(cmd: list[str], cwd: Path, what: str) -> None:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
        raise Unmeasurable(f"{what} failed:\n{tail}")


def _make_environment(revdir: Path, kind: str) -> None:
    venv = revdir / ".venv"
    if kind.startswith("light "):
        _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], revdir, "python -m venv")
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        # Plain directory lines: the current environment's own .pth files (its editable install
        # of this checkout among them) are not read, so REV's code is the one imported.
        lines = kind.removeprefix("light ").split(os.pathsep)
        pth = venv / "lib" / version / "site-packages" / "deblo-bench-current.pth"
        pth.write_text("\n".join(lines) + "\n")
        return
    _run([sys.executable, "-m", "venv", str(venv)], revdir, "python -m venv")
    pip = [str(python(revdir)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run([*pip, "--no-deps", "--require-hashes", "-r", LOCK], revdir, f"pip install -r {LOCK}")
    _run([*pip, "--no-deps", "-e", "."], revdir, "pip install -e .")


def _copy_shared(revdir: Path) -> None:
    """Today's measuring code over REV's: bench/, the fakes and the test support."""
    for rel in SHARED:
        shutil.rmtree(revdir / rel, ignore_errors=True)
        shutil.copytree(ROOT / rel, revdir / rel, ignore=shutil.ignore_patterns("__pycache__"))
    init = revdir / "tests" / "__init__.py"
    if not init.exists():
        shutil.copy(ROOT / "tests" / "__init__.py", init)


def prepare(rev: str) -> tuple[str, Path]:
    """REV's full commit id and its directory, environment ready and today's bench copied in."""
    sha = resolve(rev)
    revdir = cache_root() / sha
    marker = revdir / MARKER
    kind = _environment_kind(revdir) if revdir.exists() else ""
    if not (marker.exists() and marker.read_text() == kind):
        shutil.rmtree(revdir, ignore_errors=True)
        print(f"preparing {rev} ({sha[:12]}) in {revdir}", file=sys.stderr)
        _extract(sha, revdir)
        kind = _environment_kind(revdir)
        _make_environment(revdir, kind)
        marker.write_text(kind)
    _copy_shared(revdir)
    return sha, revdir
