"""Fixtures shared by every test: `harness` and `make_harness(**env)` (see tests/support/harness.py).

The backend comes from TEST_DATABASE (sqlite | postgres) and TEST_STATE (memory | redis). The
schema is migrated once per session with Alembic; each test then gets a copy (SQLite) or a
truncated database (PostgreSQL) and its own Redis key prefix. A missing PostgreSQL or Redis makes
the tests fail, never skip.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import (
    Database,
    Harness,
    backend,
    clear_redis,
    drop_template,
    fresh_database,
    migrate_template,
    start_harness,
)


def pytest_configure(config: pytest.Config) -> None:
    # Several processes writing at once is the PostgreSQL deployment: the SQLite pass deselects
    # these through `-m "not postgres_only"`, and they fail when run on SQLite.
    config.addinivalue_line("markers", "postgres_only: needs PostgreSQL; runs in the PostgreSQL pass only")
    config.addinivalue_line("markers", "single_pass: the same on any database; SQLite pass only")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Rendering and browser checks use no database: the second pass (PostgreSQL + Redis) skips them
    # through `-m "not single_pass"` instead of running the same slow work twice.
    for item in items:
        if item.path.name.startswith("test_render_"):
            item.add_marker(pytest.mark.single_pass)


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    kind = backend()[0]
    workdir = tmp_path_factory.mktemp("schema")
    url = asyncio.run(migrate_template(kind, workdir))
    yield url
    asyncio.run(drop_template(kind, url))


@pytest.fixture
async def test_database(migrated_template: str, tmp_path: Path) -> Database:
    """A fresh, migrated database for this test (shared by every harness the test makes)."""
    return await fresh_database(backend()[0], migrated_template, tmp_path)


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
        if backend()[1] == "redis":
            await clear_redis(prefix)


@pytest.fixture
async def harness(make_harness: Callable[..., Awaitable[Harness]]) -> Harness:
    return await make_harness()
