"""A database left at an older revision, for a migration's test: filled with the rows of that time,
then upgraded, on SQLite and on PostgreSQL."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from bot.storage.migrate import upgrade
from tests.support.harness import (
    BACKENDS,
    POSTGRES_ADMIN_URL,
    create_postgres_database,
    drop_postgres_database,
)


@contextlib.asynccontextmanager
async def database_at(backend_name: str, workdir: Path, revision: str) -> AsyncIterator[str]:
    """The URL of a throw-away database of `backend_name` migrated to `revision` only."""
    if BACKENDS[backend_name][0] == "postgres":
        url = await create_postgres_database(POSTGRES_ADMIN_URL, "deblo_migration", durable=False,
                                             revision=revision)
        try:
            yield url
        finally:
            await drop_postgres_database(POSTGRES_ADMIN_URL, url)
    else:
        url = f"sqlite+aiosqlite:///{workdir / 'old.db'}"
        await upgrade(url, revision)
        yield url
