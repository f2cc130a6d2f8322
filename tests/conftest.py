"""Fixtures shared by every test: `harness` and `make_harness(**env)` (see tests/support/harness.py).

A test states what it needs by its fixtures. One that asks for the database (`test_database`, and so
`harness`, `make_harness`, `migrated_template`) runs once per backend: `sqlite` (a SQLite file,
in-process state) and `postgres` (PostgreSQL and Redis), as the `backend_name` fixture's parameter;
a test that asks for neither runs once. `--backend sqlite|postgres` (or TEST_BACKEND) runs the first
kind on one backend only. The schema is migrated once per session and backend (per process);
each test then gets a copy (SQLite) or a truncated database (PostgreSQL) and its own Redis key
prefix. A missing PostgreSQL or Redis makes the tests fail, never skip.

Markers: `postgres_only` (several processes writing at once: the PostgreSQL deployment),
`sqlite_only` (the single-process deployment), `one_backend` (the database only holds what the test
looks at: a document rendered, a photo read, a voice note converted, a sandbox run; what it checks
does not depend on the backend, so it runs once, on sqlite), `serial` (must have the machine to
itself: run after the others, alone, by scripts/test).
"""

from __future__ import annotations

import asyncio
import gc
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import (
    BACKENDS,
    Database,
    Harness,
    clear_redis,
    drop_template,
    fresh_database,
    migrate_template,
    start_harness,
    use_backend,
)


def pytest_configure(config: pytest.Config) -> None:
    # The cyclic collector less often: a test run makes millions of short-lived objects, and with
    # the default threshold (700) it scanned the young generation thousands of times a second; at
    # 50,000 the same tests ran 11 % faster (tests/school and tests/outreach on sqlite, 82 s to 73 s).
    gc.set_threshold(50_000, 20, 50)
    _shard(config)


def pytest_collection_finish(session: pytest.Session) -> None:
    # What importing and collecting made lives until the end: frozen, it is never scanned again.
    gc.collect()
    gc.freeze()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backend", choices=("all", *BACKENDS), default=os.environ.get("TEST_BACKEND", "all"),
                     help="run the tests that use the database on this backend only (default: all)")
    parser.addoption("--database-tests", choices=("all", "only", "none"), default="all",
                     help="only: just the tests that use the database; none: just the others (default: all)")
    parser.addoption("--plain-areas", default=None,
                     help="the tests that use no database to run, by area (tests/AREA): 'agent,sandbox' "
                          "those areas' only, '~agent,~sandbox' all but those (default: --database-tests)")
    parser.addoption("--shard", default=None, metavar="K/N",
                     help="of the tests otherwise chosen, those of the K-th of N shares of the test modules "
                          "(modules in order, dealt in turn): scripts/test runs the shares side by side")


def _looks(path: Path) -> bool:
    """A module that looks at what a person sees (test_render_*: documents through LibreOffice, pages
    and charts in Chromium; *_browser: pages driven in Chromium): the pixels do not depend on the
    backend, so its tests that need data run on one backend."""
    return path.stem.startswith("test_render_") or path.stem.endswith("_browser")


def _backends_of(definition: pytest.Item) -> list[str]:
    if definition.get_closest_marker("postgres_only"):
        return ["postgres"]
    once = any(definition.get_closest_marker(m) for m in ("sqlite_only", "one_backend"))
    if once or _looks(definition.path):
        return ["sqlite"]
    return list(BACKENDS)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # The backend is a parameter of the tests that ask for it, and of those only.
    if "backend_name" in metafunc.fixturenames:
        metafunc.parametrize("backend_name", _backends_of(metafunc.definition), indirect=True,
                             scope="session")


def _plain_wanted(config: pytest.Config) -> Callable[[pytest.Item], bool]:
    """Whether a test that uses no database runs in this process: scripts/test splits them by area
    between its two processes, so that each process's share of the suite takes as long."""
    areas = config.getoption("--plain-areas")
    if areas is None:
        everyone = config.getoption("--database-tests") != "only"
        return lambda _item: everyone
    names = {a.strip() for a in areas.split(",") if a.strip()}
    excluded = {n[1:] for n in names if n.startswith("~")}
    included = names - {f"~{n}" for n in excluded}

    def wanted(item: pytest.Item) -> bool:
        parts = item.path.relative_to(config.rootpath).parts
        area = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
        return area not in excluded if excluded else area in included

    return wanted


def _shard(config: pytest.Config) -> tuple[int, int] | None:
    """--shard K/N as (K, N); a bad one is refused before anything is collected."""
    shard = config.getoption("--shard")
    if shard is None:
        return None
    try:
        k, n = (int(part) for part in shard.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--shard {shard}: K/N expected, as 1/2") from None
    if not 1 <= k <= n:
        raise pytest.UsageError(f"--shard {shard}: K between 1 and N expected")
    return k, n


def _in_shard(config: pytest.Config, items: list[pytest.Item]) -> Callable[[pytest.Item], bool]:
    """Whether a test's module is in this process's share (--shard K/N). By module, not by test: a
    module's fixtures and its tests' order stay together; the modules collected (the same in every
    process given the same arguments) dealt in turn, in order, so each share gets a part of every area."""
    shard = _shard(config)
    if shard is None:
        return lambda _item: True
    k, n = shard
    mine = set(sorted({item.path for item in items})[k - 1::n])
    return lambda item: item.path in mine


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    chosen, database_tests = config.getoption("--backend"), config.getoption("--database-tests")
    if (chosen == "all" and database_tests == "all" and config.getoption("--plain-areas") is None
            and config.getoption("--shard") is None):
        return
    in_shard = _in_shard(config, items)
    plain_wanted = _plain_wanted(config)
    kept: list[pytest.Item] = []
    left: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        name = callspec.params.get("backend_name") if callspec else None
        if name is None:
            wanted = plain_wanted(item)
        else:
            wanted = database_tests != "none" and chosen in ("all", name)
        (kept if wanted and in_shard(item) else left).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


@pytest.fixture(scope="session")
def backend_name(request: pytest.FixtureRequest) -> str:
    """`sqlite` or `postgres`: set by pytest_generate_tests for each test that asks for the database."""
    return str(request.param)


@pytest.fixture(scope="session")
def migrated_template(backend_name: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    kind = BACKENDS[backend_name][0]
    workdir = tmp_path_factory.mktemp(f"schema-{backend_name}")
    url = asyncio.run(migrate_template(kind, workdir))
    yield url
    asyncio.run(drop_template(kind, url))


@pytest.fixture
async def test_database(backend_name: str, migrated_template: str, tmp_path: Path) -> Database:
    """A fresh, migrated database for this test (shared by every harness the test makes)."""
    use_backend(backend_name)
    return await fresh_database(backend_name, migrated_template, tmp_path)


@pytest.fixture
async def make_harness(
    test_database: Database, tmp_path: Path
) -> AsyncIterator[Callable[..., Awaitable[Harness]]]:
    made: list[Harness] = []
    prefix = f"test:{uuid.uuid4().hex[:12]}:"

    async def make(**env: Any) -> Harness:
        harness = await start_harness(test_database, tmp_path / f"data{len(made)}", prefix, env)
        made.append(harness)
        return harness

    try:
        yield make
    finally:
        for harness in reversed(made):
            await harness.close()
        if test_database.state == "redis":
            await clear_redis(prefix)


@pytest.fixture
async def harness(make_harness: Callable[..., Awaitable[Harness]]) -> Harness:
    return await make_harness()
