"""The long-lived clients of one process, built once at start-up and closed at shutdown.

`build_services` is the only place these clients are constructed; handlers and tools receive them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.clock import Clock, system_now
from bot.config import Settings
from bot.storage.db import make_engine, make_sessionmaker
from bot.storage.state import State, make_state

if TYPE_CHECKING:
    # build_services imports them when it makes them: this module, which nearly every other one
    # imports, pulls in no client library.
    from bot.agent.llm import LLMClient
    from bot.channel.twilio_client import TwilioClient
    from bot.storage.filestore import FileStore
    from bot.storage.job_queue import JobQueue


class Console(Protocol):
    """Where `python -m bot chat` shows the replies instead of sending them (bot.channel.outbound's
    ConsoleSink); described here because this module sits below the channel."""

    def show(self, to: str, text: str, media_path: str | None = None) -> None: ...


@dataclass
class Services:
    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    state: State
    http: httpx.AsyncClient
    twilio: TwilioClient
    llm: LLMClient
    files: FileStore
    jobs: JobQueue  # background jobs (run by bot.pipeline.job_workers)
    clock: Clock = system_now
    console: Console | None = None  # set when running `python -m bot chat`
    extra: dict[str, Any] = field(default_factory=dict)

    async def close(self) -> None:
        for client in (self.llm, self.twilio):
            close = getattr(client, "close", None)
            if close is not None:
                await close()
        await self.http.aclose()
        self.jobs.close()
        await self.state.close()
        await self.engine.dispose()


async def build_services(settings: Settings, *, clock: Clock = system_now) -> Services:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(settings.database_url)
    from bot.agent.llm import LLMClient
    from bot.channel.twilio_client import TwilioClient
    from bot.storage.filestore import LocalFileStore
    from bot.storage.job_queue import JobQueue

    state = make_state(settings.redis_url, settings.redis_key_prefix, settings.data_dir / "locks")
    return Services(
        settings=settings,
        engine=engine,
        sessions=make_sessionmaker(engine),
        state=state,
        http=httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=10.0), follow_redirects=False),
        twilio=TwilioClient(settings, state=state),  # each sender's pace shared through the state
        llm=LLMClient(settings),
        files=LocalFileStore(settings.data_dir / "files"),
        jobs=JobQueue(settings),
        clock=clock,
    )
