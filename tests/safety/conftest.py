"""The safety tests' fixtures: the real SMTP server (tests/support/outreach.py) and the moderation
endpoint's stand-in (tests/fakes/moderation.py)."""

from collections.abc import AsyncIterator

import pytest

from tests.fakes.moderation import FakeModeration
from tests.support.outreach import smtp_server  # noqa: F401  (a fixture, found by pytest here)


@pytest.fixture
async def moderation() -> AsyncIterator[FakeModeration]:
    fake = FakeModeration()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()
