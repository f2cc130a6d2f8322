"""Fixtures for the library's index and search: real services on the test database (SQLite or
PostgreSQL, the test's backend), a hand-set clock, and the embeddings stand-in (tests/fakes)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.clock import ManualClock
from bot.config import load_settings
from bot.services import Services, build_services
from bot.storage.models import User
from tests.fakes.embeddings import API_KEY, FakeEmbeddings
from tests.support.harness import Database


@pytest.fixture
async def embeddings() -> AsyncIterator[FakeEmbeddings]:
    fake = FakeEmbeddings()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()


@pytest.fixture
async def make_services(test_database: Database, tmp_path: Path,
                        embeddings: FakeEmbeddings) -> AsyncIterator[Callable[..., Awaitable[Services]]]:
    """Services with EMBEDDINGS=openai on the stand-in unless told otherwise (`EMBEDDINGS="off"`)."""
    made: list[Services] = []

    async def make(**env: Any) -> Services:
        settings = load_settings({
            "DATA_DIR": str(tmp_path / f"data{len(made)}"), "SECRET_KEY": "test-secret",
            "DATABASE_URL": test_database.url, "EMBEDDINGS": "openai", "EMBEDDINGS_BASE_URL": embeddings.url,
            "EMBEDDINGS_API_KEY": API_KEY, "EMBEDDINGS_MODEL": "fake-embed-1", "EMBEDDINGS_BATCH": "4",
            **{k: str(v) for k, v in env.items()},
        })
        services = await build_services(settings, clock=ManualClock())
        made.append(services)
        return services

    try:
        yield make
    finally:
        for services in made:
            await services.close()


async def add_users(services: Services, *phones: str) -> list[User]:
    async with services.sessions() as db:
        users = [User(phone=p, mode="pro", language="fr", onboarding_step=None) for p in phones]
        db.add_all(users)
        await db.commit()
    return users


@pytest.fixture
async def users_of() -> Callable[..., Awaitable[list[User]]]:
    return add_users
