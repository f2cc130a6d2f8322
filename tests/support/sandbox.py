"""The sandbox tests' settings, services and commands, and each test's parent control groups: named
here, removed when the test ends (tests/sandbox/conftest.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from pathlib import Path

import httpx

from bot.agent.llm import LLMClient
from bot.agent.toolspec import ToolContext
from bot.channel.twilio_client import TwilioClient
from bot.config import Settings, load_settings
from bot.sandbox import cgroup
from bot.services import Services
from bot.storage.db import make_engine, make_sessionmaker
from bot.storage.filestore import LocalFileStore
from bot.storage.job_queue import JobQueue
from bot.storage.state import make_state
from tools.bash_execute import TOOL as BASH

_made: list[str] = []


def cgroup_name() -> str:
    """A parent group name for one test (SANDBOX_CGROUP); its directories go when the test ends."""
    name = f"deblo-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    _made.append(name)
    return name


def parent_dirs(name: str) -> list[Path]:
    """Where a parent group of that name is, in every hierarchy of this process."""
    own = cgroup._own_paths()
    found = []
    for root, point, fstype, opts in cgroup._mounts():
        keys = [""] if fstype == "cgroup2" else [c for c in cgroup.CONTROLLERS if c in opts]
        for key in keys:
            for base in (cgroup._inside(root, point, own.get(key, "/")), point):
                if (base / name).is_dir():
                    found.append(base / name)
    return list(dict.fromkeys(found))


def remove_parent_groups() -> None:
    """Removes the parent groups named since the last call (the directories left empty)."""
    for name in _made:
        for path in parent_dirs(name):
            with contextlib.suppress(OSError):
                path.rmdir()
    _made.clear()


def make_settings(tmp_path: Path, **env: str) -> Settings:
    values = {
        "DATA_DIR": str(tmp_path / "data"),
        "SECRET_KEY": "test-secret",
        "TWILIO_AUTH_TOKEN": "token",
        "LLM_API_KEY": "llm-key-that-must-not-leak",
        "SANDBOX_CGROUP": cgroup_name(),
    }
    return load_settings(values | env)


async def open_services(settings: Settings, **_: object) -> Services:
    """The sandbox needs no database: the engine is made but never connected."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(f"sqlite+aiosqlite:///{settings.data_dir / 'deblo.db'}")
    return Services(
        settings=settings,
        engine=engine,
        sessions=make_sessionmaker(engine),
        state=make_state(None),
        http=httpx.AsyncClient(),
        twilio=TwilioClient(settings),
        llm=LLMClient(settings),
        files=LocalFileStore(settings.data_dir / "files"),
        jobs=JobQueue(settings),
    )


async def bash(services: Services, command: str) -> dict:
    ctx = ToolContext(
        services=services, user_id=1, conversation_id=1, channel="whatsapp", mode="pro", language="fr"
    )
    return await BASH.run(ctx, {"command": command})


async def assert_bot_unharmed(services: Services) -> None:
    """The sandbox still works afterwards and this process can still start processes."""
    result = await bash(services, "echo still-here")
    assert result["success"] and result["stdout"] == "still-here\n"
    proc = await asyncio.create_subprocess_exec("true")
    assert await proc.wait() == 0
