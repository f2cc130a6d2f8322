"""The pinned dependencies (requirements/run.txt and requirements/test.txt, made by scripts/lock)
that scripts/start, scripts/test and the Dockerfile install: every dependency of pyproject.toml is
pinned there to one version that its range admits, with hashes, and the environment the tests run
in is the one the lock describes (a dependency added without re-locking fails here)."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")


def _pins(name: str) -> dict[str, tuple[str, int]]:
    """Each pinned package of a lock file: its version and the number of hashes given for it."""
    pins: dict[str, tuple[str, int]] = {}
    current = ""
    for line in (ROOT / "requirements" / name).read_text().splitlines():
        found = PIN.match(line)
        if found:
            current = canonicalize_name(found[1])
            pins[current] = (found[2], 0)
        elif current and line.strip().startswith("--hash=sha256:"):
            version, hashes = pins[current]
            pins[current] = (version, hashes + 1)
    return pins


@pytest.mark.parametrize(("lock", "extras"), [("run.txt", ()), ("test.txt", ("test",))])
def test_every_dependency_is_pinned_in_its_range_with_hashes(lock: str, extras: tuple[str, ...]) -> None:
    pins = _pins(lock)
    wanted = [Requirement(r) for r in PROJECT["dependencies"]]
    wanted += [Requirement(r) for extra in extras for r in PROJECT["optional-dependencies"][extra]]
    for requirement in wanted:
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not in requirements/{lock}: run scripts/lock"
        version = pins[name][0]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{name}=={version} in requirements/{lock} is outside {requirement}: run scripts/lock")
    assert all(hashes > 0 for _, hashes in pins.values()), "every pin carries its hashes"


def test_the_known_fixes_are_floors_of_the_ranges() -> None:
    floors = {str(canonicalize_name(Requirement(r).name)): Requirement(r).specifier
              for r in PROJECT["dependencies"]}
    for name, fixed_below in (("aiohttp", "3.14.2"), ("pillow", "12.2.0"), ("pypdf", "6.14.1")):
        assert not floors[name].contains(fixed_below), f"{name}'s floor admits {fixed_below}"


def test_the_tests_run_on_the_pinned_versions() -> None:
    for name, (version, _) in _pins("test.txt").items():
        installed = metadata.version(name)
        assert installed == version, f"{name} {installed} is installed, the lock says {version}"
