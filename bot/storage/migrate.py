"""Alembic, configured in code (no alembic.ini): `python -m bot db upgrade` calls `upgrade`, and
`serve` and `worker` call `ready_at_start` (migrating with AUTO_MIGRATE, else saying what to run).

Migrations run on a connection of the bot's own async engine, so the same code serves SQLite
(aiosqlite) and PostgreSQL (asyncpg), from the CLI or from inside a running event loop (tests).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.storage.db import make_engine

log = logging.getLogger("bot.storage.migrate")

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# PostgreSQL's advisory lock taken by a migration: processes started together with AUTO_MIGRATE=1
# migrate one after the other, and the later ones find the schema at its head.
MIGRATION_LOCK = 0x6465626C6F  # "deblo"
UPGRADE = "python -m bot db upgrade"


def include_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Objects made by raw DDL (full-text search tables and their shadow tables) are not models."""
    if type_ == "table" and reflected and compare_to is None and name and "_fts" in name:
        return False
    return not (type_ == "index" and name and name.endswith("_fts"))


def alembic_config(connection: Any = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("path_separator", "os")
    cfg.attributes["connection"] = connection
    return cfg


async def upgrade(database_url: str, revision: str = "head", engine: AsyncEngine | None = None) -> None:
    own = engine is None
    engine = engine or make_engine(database_url)
    try:
        async with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
            await conn.run_sync(lambda sync_conn: command.upgrade(alembic_config(sync_conn), revision))
    finally:
        if own:
            await engine.dispose()


async def current_revision(engine: AsyncEngine) -> str | None:
    async with engine.connect() as conn:
        return await conn.run_sync(lambda c: MigrationContext.configure(c).get_current_revision())


def head_revision() -> str | None:
    """The revision the code needs."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def _known(revision: str) -> bool:
    try:
        return ScriptDirectory.from_config(alembic_config()).get_revision(revision) is not None
    except CommandError:
        return False


async def ready_at_start(database_url: str, auto_migrate: bool, timeout_s: float = 15.0) -> str | None:
    """Before `serve` or `worker` takes any work: None when the schema is the code's, migrated here
    first with `auto_migrate`; else the one line that says what to run. A database that does not
    answer is left to the running process (`serve` spools webhooks until it is back)."""
    engine = make_engine(database_url)
    # Reading the revision, alembic says at INFO which dialect it found: not worth a line at each start.
    said = logging.getLogger("alembic.runtime.migration")
    level = said.level
    said.setLevel(logging.WARNING)
    try:
        async with asyncio.timeout(timeout_s):
            current = await current_revision(engine)
    except Exception as exc:  # any driver error means the same here: the schema cannot be read now
        log.warning("the database's migrations cannot be checked now: %s", type(exc).__name__)
        return None
    finally:
        said.setLevel(level)
        await engine.dispose()
    head = head_revision()
    if current == head:
        return None
    if current is not None and not _known(current):
        return (f"the database is at revision {current}, which this code does not know (a newer "
                "version migrated it): run that version, or restore the database it had")
    if auto_migrate:
        log.warning("migrating the database from %s to %s (AUTO_MIGRATE)", current or "nothing", head)
        await upgrade(database_url)
        return None
    where = "has no tables yet" if current is None else f"is at revision {current}"
    return f"the database {where} and this code needs {head}: run `{UPGRADE}` (or set AUTO_MIGRATE=1)"


async def schema_differences(engine: AsyncEngine) -> list[Any]:
    """What autogenerate would change between the models and the migrated database (empty: in sync)."""
    from bot.storage.models import Base

    def compare(sync_conn: Any) -> list[Any]:
        ctx = MigrationContext.configure(
            sync_conn, opts={"include_object": include_object, "compare_type": True}
        )
        differences: list[Any] = compare_metadata(ctx, Base.metadata)
        return differences

    async with engine.connect() as conn:
        return await conn.run_sync(compare)


async def autogenerate(database_url: str, message: str, rev_id: str) -> None:
    """Writes a new revision from the differences (developer tool: `python -m bot db revision`)."""
    engine = make_engine(database_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(
                lambda c: command.revision(
                    alembic_config(c), message=message, autogenerate=True, rev_id=rev_id
                )
            )
    finally:
        await engine.dispose()
