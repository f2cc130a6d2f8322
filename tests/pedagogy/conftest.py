"""Services on a fresh, migrated SQLite database with a manual clock, for the pedagogy unit tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.clock import ManualClock
from bot.config import load_settings
from bot.services import Services, build_services
from bot.storage.migrate import upgrade
from tests.support.pedagogy import START


@pytest.fixture
async def unit_services(tmp_path: Path) -> AsyncIterator[Services]:
    settings = load_settings({
        "DATA_DIR": str(tmp_path),
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'unit.db'}",
        "QUIZ_TTL_S": "600",
        "BONUS_MAX_AWARDS_PER_DAY": "3",
        "BONUS_MAX_CREDITS_PER_DAY": "10",
    })
    services = await build_services(settings, clock=ManualClock(START))
    await upgrade(settings.database_url, engine=services.engine)
    try:
        yield services
    finally:
        await services.close()


