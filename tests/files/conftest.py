"""Fixtures for the file library tests: real services on the test database (SQLite or
PostgreSQL, per TEST_DATABASE), with tool contexts whose deliveries are recorded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot.agent.toolspec import ToolContext
from bot.config import load_settings
from bot.services import Services, build_services
from bot.storage.models import User, UserFile
from tests.harness import Database


@dataclass
class Library:
    services: Services
    users: list[User]
    sent: list[tuple[int, str, UserFile | None]] = field(default_factory=list)

    def ctx(self, user: User, *, channel: str = "whatsapp", language: str = "fr") -> ToolContext:
        async def deliver(text: str = "", media: UserFile | None = None) -> None:
            self.sent.append((user.id, text, media))

        return ToolContext(
            services=self.services,
            user_id=user.id,
            conversation_id=0,
            channel=channel,
            mode=user.mode,
            language=language,
            tool_call_id="call_1",
            deliver=deliver,
        )


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
