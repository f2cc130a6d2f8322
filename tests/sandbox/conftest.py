"""Each test's sandboxes live under a parent control group of their own, removed afterwards."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.capabilities import cgroup

_made: list[str] = []


def cgroup_name() -> str:
    """A parent group name for one test (SANDBOX_CGROUP); its directories go when the test ends."""
    name = f"deblo-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    _made.append(name)
    return name


def parent_dirs(name: str) -> list[Path]:
    """Where a parent group of that name is, in every hierarchy of this process."""
    own = cgroup._own_paths()
    found = []
    for root, point, fstype, opts in cgroup._mounts():
        keys = [""] if fstype == "cgroup2" else [c for c in cgroup.CONTROLLERS if c in opts]
        for key in keys:
            for base in (cgroup._inside(root, point, own.get(key, "/")), point):
                if (base / name).is_dir():
                    found.append(base / name)
    return list(dict.fromkeys(found))


@pytest.fixture(autouse=True)
def _remove_parent_groups() -> Iterator[None]:
    yield
    for name in _made:
        for path in parent_dirs(name):
            with contextlib.suppress(OSError):
                path.rmdir()
    _made.clear()
