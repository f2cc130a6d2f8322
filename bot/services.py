"""The long-lived clients of one process, built once at start-up and closed at shutdown.

`build_services` is the only place these clients are constructed; handlers and tools receive them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.clock import Clock, system_now
from bot.config import Settings
from bot.storage.db import make_engine, make_sessionmaker
from bot.storage.state import State, make_state


@dataclass
class Services:
    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    state: State
    http: httpx.AsyncClient
    clock: Clock = system_now
    # Filled by build_services from the modules that own them (see each attribute's module).
    twilio: Any = None  # bot.channel.twilio_client.TwilioClient
    llm: Any = None  # bot.agent.llm.LLMClient
    files: Any = None  # bot.storage.filestore.FileStore
    console: Any = None  # bot.channel.console.ConsoleSink when running `python -m bot chat`
    jobs: Any = None  # bot.storage.job_queue.JobQueue: background jobs (run by bot.pipeline.jobs)
    extra: dict[str, Any] = field(default_factory=dict)

    async def close(self) -> None:
        for client in (self.llm, self.twilio):
            close = getattr(client, "close", None)
            if close is not None:
                await close()
        await self.http.aclose()
        if self.jobs is not None:
            self.jobs.close()
        await self.state.close()
        await self.engine.dispose()


async def build_services(settings: Settings, *, clock: Clock = system_now) -> Services:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(settings.database_url)
    services = Services(
        settings=settings,
        engine=engine,
        sessions=make_sessionmaker(engine),
        state=make_state(settings.redis_url, settings.redis_key_prefix),
        http=httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=10.0), follow_redirects=False),
        clock=clock,
    )
    from bot.agent.llm import LLMClient
    from bot.channel.twilio_client import TwilioClient
    from bot.storage.filestore import LocalFileStore
    from bot.storage.job_queue import JobQueue

    services.twilio = TwilioClient(settings)
    services.llm = LLMClient(settings)
    services.files = LocalFileStore(settings.data_dir / "files")
    services.jobs = JobQueue(settings)
    return services
