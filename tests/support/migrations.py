"""A database left at an older revision, on the test's backend, for the tests of one migration over
rows written before it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bot.storage.migrate import upgrade
from tests.support.harness import (
    BACKENDS,
    POSTGRES_ADMIN_URL,
    create_postgres_database,
    drop_postgres_database,
)


@asynccontextmanager
async def database_at(backend_name: str, tmp_path: Path, revision: str) -> AsyncIterator[str]:
    """The URL of a new database migrated up to `revision` (a SQLite file in `tmp_path`, or a
    PostgreSQL database dropped afterwards)."""
    if BACKENDS[backend_name][0] == "postgres":
        url = await create_postgres_database(POSTGRES_ADMIN_URL, "deblo_migration", durable=False,
                                             revision=revision)
        try:
            yield url
        finally:
            await drop_postgres_database(POSTGRES_ADMIN_URL, url)
    else:
        url = f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
        await upgrade(url, revision)
        yield url
