"""`serve` and `worker` on a fresh DATA_DIR or an old schema: migrated at start (AUTO_MIGRATE, the
default on SQLite), or stopped by one line that says to run `python -m bot db upgrade` (the default on
PostgreSQL). What failed before: `serve` on a fresh DATA_DIR without `db upgrade` came up, then died
on an SQL traceback (« no such table: inbound_messages ») at the first webhook."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from bot.config import load_settings
from bot.storage.migrate import head_revision, ready_at_start, upgrade
from tests.fakes.llm import FakeLLM
from tests.fakes.twilio import FakeTwilio
from tests.support.harness import (
    POSTGRES_ADMIN_URL,
    create_postgres_database,
    drop_postgres_database,
    new_sid,
    sign,
)
from tests.support.ports import free_port
from tests.support.processes import started_fakes  # noqa: F401  (a fixture)

ROOT = Path(__file__).resolve().parents[2]
PHONE = "+2250700000042"
WHATSAPP_FROM = "whatsapp:+14155238886"


def _env(tmp_path: Path, twilio: FakeTwilio, llm: FakeLLM, port: int, **extra: str) -> dict[str, str]:
    """What a deployment sets, from an empty directory: no .env file, DATA_DIR not made yet."""
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "DATA_DIR": str(tmp_path / "data"),
            "HOST": "127.0.0.1", "PORT": str(port), "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
            "TWILIO_ACCOUNT_SID": twilio.account_sid, "TWILIO_AUTH_TOKEN": twilio.auth_token,
            "TWILIO_API_BASE_URL": twilio.url, "TWILIO_WHATSAPP_FROM": WHATSAPP_FROM,
            "LLM_BASE_URL": llm.url, "LLM_API_KEY": "sk-test-start-migrations",
            "SECRET_KEY": "kq3HzV0m-Tn8yWc2rLbP5dJx9fGs4eA7uQ1iOoZ6", "LOG_LEVEL": "WARNING", **extra}


async def _ready(session: aiohttp.ClientSession, url: str, proc: asyncio.subprocess.Process) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.returncode is None, "serve exited"
        try:
            async with session.get(url + "/readyz") as resp:
                if resp.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError("serve did not become ready in 60 s")


async def _inbound(session: aiohttp.ClientSession, url: str, twilio: FakeTwilio) -> int:
    sid = new_sid()
    params = {"MessageSid": sid, "SmsMessageSid": sid, "From": f"whatsapp:{PHONE}", "To": WHATSAPP_FROM,
              "Body": "Bonjour", "NumMedia": "0", "AccountSid": twilio.account_sid}
    signature = sign(twilio.auth_token, url + "/twilio/inbound", params)
    async with session.post(url + "/twilio/inbound", data=params,
                            headers={"X-Twilio-Signature": signature}) as resp:
        return resp.status


@pytest.mark.parametrize("auto_migrate", ["1", None])  # None: SQLite's default
async def test_serve_on_an_empty_data_dir_migrates_and_answers(
        auto_migrate: str | None, started_fakes: tuple[FakeTwilio, FakeLLM],  # noqa: F811
        tmp_path: Path) -> None:
    twilio, llm = started_fakes
    port = free_port()
    env = _env(tmp_path, twilio, llm, port, **({"AUTO_MIGRATE": auto_migrate} if auto_migrate else {}))
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "serve", cwd=tmp_path, env=env,
                                                stderr=asyncio.subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:
            await _ready(session, url, proc)
            assert await _inbound(session, url, twilio) == 200
            deadline = time.monotonic() + 30
            while not any(m.get("To") == f"whatsapp:{PHONE}" for m in twilio.sent):
                assert time.monotonic() < deadline, "no answer reached Twilio"
                await asyncio.sleep(0.1)
    finally:
        proc.terminate()
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    said = err.decode()
    assert "Traceback" not in said and "no such table" not in said, said
    assert "migrating the database from nothing to" in said


def _refused(command: str, tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {**_env(tmp_path, FakeTwilio(), FakeLLM(), free_port()), "REDIS_URL": "redis://127.0.0.1:1/0",
           **extra}
    return subprocess.run([sys.executable, "-m", "bot", command], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize(("command", "revision"), [("serve", None), ("worker", None), ("serve", "0013")])
def test_without_auto_migrate_one_line_says_what_to_run(command: str, revision: str | None,
                                                         tmp_path: Path) -> None:
    database = tmp_path / "data" / "deblo.db"
    if revision is not None:  # an old schema: the code has moved on since the last `db upgrade`
        asyncio.run(upgrade(f"sqlite+aiosqlite:///{database}", revision))
    done = _refused(command, tmp_path, AUTO_MIGRATE="0")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("error: the database ") and "run `python -m bot db upgrade`" in line
    assert f"this code needs {head_revision()}" in line
    assert ("is at revision 0013" if revision else "has no tables yet") in line
    # Left as it was: nothing migrated behind the operator's back.
    with sqlite3.connect(database) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        versions = db.execute("SELECT version_num FROM alembic_version").fetchall() if tables else []
    assert versions == ([(revision,)] if revision else [])


def test_auto_migrate_is_on_for_sqlite_and_off_for_postgresql() -> None:
    postgres = {"DATABASE_URL": "postgresql+asyncpg://deblo@127.0.0.1:5432/deblo"}
    assert load_settings({}).auto_migrate and not load_settings(postgres).auto_migrate
    assert load_settings({**postgres, "AUTO_MIGRATE": "1"}).auto_migrate
    assert not load_settings({"AUTO_MIGRATE": "0"}).auto_migrate


@pytest.mark.postgres_only
async def test_processes_started_together_on_postgresql_migrate_once(backend_name: str) -> None:
    """PostgreSQL's default is to stop and say so (a release's migration is run once, as compose's
    `migrate`); with AUTO_MIGRATE=1, processes started together take turns, and all come up."""
    url = await create_postgres_database(POSTGRES_ADMIN_URL, "deblo_start", durable=False, revision="0013")
    try:
        line = await ready_at_start(url, load_settings({"DATABASE_URL": url}).auto_migrate)
        assert line is not None and "is at revision 0013" in line and "python -m bot db upgrade" in line
        assert await asyncio.gather(*(ready_at_start(url, True) for _ in range(3))) == [None, None, None]
        assert await ready_at_start(url, False) is None  # at the head now
    finally:
        await drop_postgres_database(POSTGRES_ADMIN_URL, url)
