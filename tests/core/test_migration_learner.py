"""Migration 0012 on a database that already has users: reported results become unverified, a
student who gave their class is not asked again, a number with a confirmed parent link becomes a
parent — on SQLite and on PostgreSQL, from revision 0011 with rows in it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text

from bot.storage.db import make_engine
from bot.storage.migrate import upgrade
from tests.support.migrations import database_at

NOW = "2026-11-30 10:00:00"


@pytest.fixture
async def at_0011(backend_name: str, tmp_path: Path) -> AsyncIterator[str]:
    async with database_at(backend_name, tmp_path, "0011") as url:
        yield url


def _sql(value: str | None) -> str:
    return "NULL" if value is None else f"'{value}'"


def _user(user_id: int, phone: str, mode: str, role: str | None, step: str | None,
          level: str | None = None) -> str:
    return ("INSERT INTO users (id, phone, mode, role, onboarding_step, school_level, language, timezone, "
            "email_verified, opted_out, credit_balance, delivery_failures, created_at) VALUES "
            f"({user_id}, '{phone}', '{mode}', {_sql(role)}, {_sql(step)}, {_sql(level)}, 'fr', "
            f"'Africa/Abidjan', false, false, 0, 0, '{NOW}')")


async def test_0012_carries_the_old_rows_over(at_0011: str) -> None:
    engine = make_engine(at_0011)
    try:
        async with engine.begin() as conn:
            for statement in (
                _user(1, "+2250700000001", "child", "student", None, "4e"),
                _user(2, "+2250700000002", "guest", "parent", "profile"),  # confirmed link: a parent
                _user(3, "+2250700000003", "guest", "parent", "new"),  # confirmed, never wrote yet
                _user(4, "+2250700000004", "guest", None, "profile"),  # pending link: unchanged
                "INSERT INTO parent_links (student_id, parent_id, status, created_at) VALUES "
                f"(1, 2, 'confirmed', '{NOW}'), (1, 3, 'confirmed', '{NOW}'), (1, 4, 'pending', '{NOW}')",
                "INSERT INTO exercise_results (user_id, subject, topic, correct, source, created_at) VALUES "
                f"(1, 'maths', 'fractions', true, 'quiz', '{NOW}'), "
                f"(1, 'maths', 'x', true, 'report', '{NOW}')",
            ):
                await conn.execute(text(statement))
        await upgrade(at_0011, engine=engine)
        async with engine.connect() as conn:
            users = (await conn.execute(text(
                "SELECT id, mode, role, onboarding_step, level_asked_at IS NOT NULL, review_nudges "
                "FROM users ORDER BY id"))).all()
            results = (await conn.execute(text(
                "SELECT source, verified, skill FROM exercise_results ORDER BY id"))).all()
    finally:
        await engine.dispose()
    assert [tuple(u) for u in users] == [
        (1, "child", "student", None, True, True),
        (2, "child", "parent", None, False, True),
        (3, "child", "parent", "new", False, True),
        (4, "guest", None, "profile", False, True),
    ]
    assert [tuple(r) for r in results] == [("quiz", True, ""), ("report", False, "")]
