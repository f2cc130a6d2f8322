"""Migration 0017 on a database that already has flags: each flag is kept as it was (SQLite copies the
table to add the hold's foreign key), nobody holds it, and the new keys hold: an operator removed
lets go of what they held and leaves the record with their e-mail; a flag removed takes its record
with it — on SQLite and on PostgreSQL, from revision 0016 with rows in it."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from bot.storage.db import make_engine
from bot.storage.migrate import upgrade
from tests.support.migrations import database_at

NOW = "2026-11-30 10:00:00"
BEFORE = (
    "INSERT INTO users (id, phone, mode, role, language, timezone, email_verified, opted_out, "
    f"credit_balance, delivery_failures, created_at) VALUES (1, '+2250700000001', 'child', 'student', "
    f"'fr', 'Africa/Abidjan', false, false, 0, 0, '{NOW}')",
    "INSERT INTO operators (id, email, role, password_hash, created_at) VALUES "
    f"(7, 'direction@ecole.ci', 'admin', 'x', '{NOW}')",
    "INSERT INTO safety_flags (id, user_id, category, source, excerpt, created_at, acknowledged_at, "
    f"acknowledged_by) VALUES (3, 1, 'self_harm', 'phrases', 'je veux mourir', '{NOW}', '{NOW}', 7), "
    f"(4, 1, 'bullying', 'meaning', 'ils se moquent de moi', '{NOW}', NULL, NULL)",
)
FLAGS = ("SELECT id, category, excerpt, acknowledged_by, held_by, held_at, hold_told_at FROM safety_flags "
         "ORDER BY id")


async def test_0017_keeps_the_flags_and_its_keys_hold(backend_name: str, tmp_path: Path) -> None:
    async with database_at(backend_name, tmp_path, "0016") as url:
        engine = make_engine(url)
        try:
            async with engine.begin() as conn:
                for statement in BEFORE:
                    await conn.execute(text(statement))
            await upgrade(url, engine=engine)
            async with engine.begin() as conn:
                kept = [tuple(row) for row in (await conn.execute(text(FLAGS))).all()]
                await conn.execute(text(f"UPDATE safety_flags SET held_by = 7, held_at = '{NOW}' "
                                        "WHERE id = 4"))
                await conn.execute(text(
                    "INSERT INTO safety_flag_events (flag_id, operator_id, operator_email, action, detail, "
                    f"created_at) VALUES (4, 7, 'direction@ecole.ci', 'read', '', '{NOW}'), "
                    f"(3, 7, 'direction@ecole.ci', 'read', '', '{NOW}')"))
            async with engine.begin() as conn:
                await conn.execute(text("DELETE FROM operators WHERE id = 7"))
                await conn.execute(text("DELETE FROM safety_flags WHERE id = 3"))
            async with engine.connect() as conn:
                after = [tuple(row) for row in (await conn.execute(text(FLAGS))).all()]
                events = [tuple(row) for row in (await conn.execute(text(
                    "SELECT flag_id, operator_id, operator_email FROM safety_flag_events"))).all()]
        finally:
            await engine.dispose()
    assert kept == [(3, "self_harm", "je veux mourir", 7, None, None, None),
                    (4, "bullying", "ils se moquent de moi", None, None, None, None)]
    assert [row[:5] for row in after] == [(4, "bullying", "ils se moquent de moi", None, None)]
    assert events == [(4, None, "direction@ecole.ci")]
