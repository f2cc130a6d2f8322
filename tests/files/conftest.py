"""Fixtures for the file library tests: real services on the test database (SQLite or
PostgreSQL, the test's backend), with tool contexts whose deliveries are recorded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config import load_settings
from bot.services import build_services
from bot.storage.models import User
from tests.support.harness import Database
from tests.support.library import Library


@pytest.fixture
async def lib(test_database: Database, tmp_path: Path) -> AsyncIterator[Library]:
    """Services on a fresh migrated database (tests/conftest.py), without the web app or workers."""
    env = {"DATA_DIR": str(tmp_path / "data"), "SECRET_KEY": "test-secret", "DATABASE_URL": test_database.url}
    services = await build_services(load_settings(env))
    try:
        async with services.sessions() as db:
            users = [
                User(phone="+2250700000001", mode="pro", language="fr", onboarding_step=None),
                User(phone="+2250700000002", mode="child", language="fr", onboarding_step=None),
            ]
            db.add_all(users)
            await db.commit()
        yield Library(services=services, users=users)
    finally:
        await services.close()
