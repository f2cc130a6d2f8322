"""The migration that records a flag's escalation, on a database that already has flags: an open
flag keeps its row and has not been escalated (the first tick will remind the admins of it), and the
migration goes back down — on SQLite and on PostgreSQL, from revision 0015 with rows in it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import inspect, text

from bot.storage.db import make_engine
from bot.storage.migrate import alembic_config, upgrade
from tests.support.migrations import database_at

NOW = "2026-11-30 10:00:00"


@pytest.fixture
async def at_0015(backend_name: str, tmp_path: Path) -> AsyncIterator[str]:
    async with database_at(backend_name, tmp_path, "0015") as url:
        yield url


async def test_open_flags_are_carried_over_not_escalated(at_0015: str) -> None:
    engine = make_engine(at_0015)
    try:
        async with engine.begin() as conn:
            await conn.execute(text(
                "INSERT INTO users (id, phone, mode, role, language, timezone, email_verified, opted_out, "
                f"credit_balance, delivery_failures, created_at) VALUES (1, '+2250700000001', 'child', "
                f"'student', 'fr', 'Africa/Abidjan', false, false, 0, 0, '{NOW}')"))
            await conn.execute(text(
                "INSERT INTO safety_flags (id, user_id, category, source, excerpt, created_at) VALUES "
                f"(1, 1, 'self_harm', 'phrases', 'je veux plus vivre', '{NOW}')"))
        await upgrade(at_0015, engine=engine)
        async with engine.connect() as conn:
            rows = (await conn.execute(text(
                "SELECT id, excerpt, acknowledged_at, escalated_at FROM safety_flags"))).all()
        assert [tuple(r) for r in rows] == [(1, "je veux plus vivre", None, None)]
        async with engine.begin() as conn:
            await conn.run_sync(lambda sync: command.downgrade(alembic_config(sync), "0015"))
        async with engine.connect() as conn:
            columns = await conn.run_sync(
                lambda sync: [c["name"] for c in inspect(sync).get_columns("safety_flags")])
            count = await conn.scalar(text("SELECT count(*) FROM safety_flags"))
        assert "escalated_at" not in columns and "excerpt" in columns and count == 1
    finally:
        await engine.dispose()
