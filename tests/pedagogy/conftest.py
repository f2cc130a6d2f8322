"""Services on the test's database (SQLite or PostgreSQL: tests/conftest.py) with a manual clock, for the
pedagogy unit tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.clock import ManualClock
from bot.config import load_settings
from bot.services import Services, build_services
from tests.support.harness import Database
from tests.support.pedagogy import START


@pytest.fixture
async def unit_services(test_database: Database, tmp_path: Path) -> AsyncIterator[Services]:
    settings = load_settings({
        "DATA_DIR": str(tmp_path),
        "DATABASE_URL": test_database.url,
        "QUIZ_TTL_S": "600",
        "BONUS_MAX_AWARDS_PER_DAY": "3",
        "BONUS_MAX_CREDITS_PER_DAY": "10",
    })
    services = await build_services(settings, clock=ManualClock(START))
    try:
        yield services
    finally:
        await services.close()


