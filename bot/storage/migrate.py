"""Alembic, configured in code (no alembic.ini): `python -m bot db upgrade` calls `upgrade`.

Migrations run on a connection of the bot's own async engine, so the same code serves SQLite
(aiosqlite) and PostgreSQL (asyncpg), from the CLI or from inside a running event loop (tests).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.storage.db import make_engine

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


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
            await conn.run_sync(lambda sync_conn: command.upgrade(alembic_config(sync_conn), revision))
    finally:
        if own:
            await engine.dispose()


async def current_revision(engine: AsyncEngine) -> str | None:
    async with engine.connect() as conn:
        return await conn.run_sync(lambda c: MigrationContext.configure(c).get_current_revision())


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
