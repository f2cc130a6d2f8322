from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.llm import FakeLLM
from tests.support.outreach import http_stub  # noqa: F401  (the local HTTP server fixture)


@pytest.fixture
async def fake_llm() -> AsyncIterator[FakeLLM]:
    server = FakeLLM()
    await server.start()
    yield server
    await server.stop()
