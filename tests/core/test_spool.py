"""The database going away: webhooks still answered 200, kept in the local spool, stored in order
once it is back, each once.

The PostgreSQL test runs its own server (initdb + pg_ctl from PG_BIN, default
/usr/lib/postgresql/15/bin, on a free port in a temporary directory, as the `postgres` user when
run as root) so that it can stop it without disturbing anything else; it fails, not skips, without
it. The SQLite test holds an exclusive lock on its own database file.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.channel.spool import Spool, SpoolEntry, SpoolFull, decode, encode
from bot.config import ConfigError, load_settings
from bot.storage.models import InboundMessage, OutboundMessage
from tests.support.harness import Database, Harness, fresh_database, migrate_template, start_harness
from tests.support.waiting import eventually

PHONE = "+2250700000081"
PG_BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))
SPOOLING = {"SPOOL_AFTER_S": "0.5", "SPOOL_REPLAY_S": "0.2", "OUTBOX_POLL_S": "0.1"}
AT = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


# --- the spool file --------------------------------------------------------------------------


def entry(n: int, kind: str = "inbound") -> SpoolEntry:
    return SpoolEntry(kind, AT, [("MessageSid", f"SM{n:032d}"), ("Body", f"message {n} — é")])


async def test_entries_are_replayed_in_order_and_then_forgotten(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", 1_000_000)
    assert not spool.pending
    for n in range(5):
        await spool.append(entry(n))
    assert spool.pending and len(spool.path.read_bytes().splitlines()) == 5
    seen: list[SpoolEntry] = []

    async def handle(e: SpoolEntry) -> None:
        seen.append(e)

    assert await spool.replay(handle) == 5
    assert seen == [entry(n) for n in range(5)] and not spool.pending
    assert await spool.replay(handle) == 0


async def test_a_failed_replay_keeps_everything_and_new_entries_queue_behind(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", 1_000_000)
    for n in range(3):
        await spool.append(entry(n))
    calls: list[int] = []

    async def down(e: SpoolEntry) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise ConnectionRefusedError("database down")

    with pytest.raises(ConnectionRefusedError):
        await spool.replay(down)
    await spool.append(entry(3))  # arrives while the first batch is not stored yet
    assert spool.pending
    seen: list[str] = []

    async def up(e: SpoolEntry) -> None:
        seen.append(dict(e.form)["Body"])

    assert await spool.replay(up) == 4  # the batch from its start (stores are idempotent), then the new one
    assert seen == [f"message {n} — é" for n in range(4)] and not spool.pending


async def test_a_torn_line_is_skipped(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", 1_000_000)
    await spool.append(entry(1))
    with spool.path.open("ab") as f:
        f.write(b'{"kind":"inbound","at":"2026-')  # a crash in the middle of a write
    seen: list[SpoolEntry] = []

    async def handle(e: SpoolEntry) -> None:
        seen.append(e)

    assert await spool.replay(handle) == 1 and seen == [entry(1)]


async def test_a_full_spool_refuses_more(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", len(encode(entry(1))) * 2)
    await spool.append(entry(1))
    await spool.append(entry(2))
    with pytest.raises(SpoolFull):
        await spool.append(entry(3))


@pytest.mark.parametrize("line", [
    b"", b"not json", b'{"kind":"other","at":"2026-03-01T08:00:00+00:00","form":[]}',
    b'{"kind":"inbound","at":"2026-03-01T08:00:00","form":[]}',  # a time without its zone
    b'{"kind":"inbound","at":"2026-03-01T08:00:00+00:00","form":{}}',
])
def test_bad_lines_are_refused(line: bytes) -> None:
    with pytest.raises(ValueError, match="not a spool entry"):
        decode(line)


def test_an_unknown_kind_is_not_written() -> None:
    with pytest.raises(ValueError, match="unknown spool entry kind"):
        encode(SpoolEntry("other", AT, []))


@pytest.mark.parametrize("name,value,message", [
    ("SPOOL_AFTER_S", "0", "SPOOL_AFTER_S must be more than 0"),
    ("OUTBOX_BACKOFF_S", "-1", "OUTBOX_BACKOFF_S must be more than 0"),
    ("OUTBOX_POLL_S", "soon", "OUTBOX_POLL_S must be a number"),
    ("SPOOL_MAX_BYTES", "10", "SPOOL_MAX_BYTES must be 4096 or more"),
])
def test_bad_outbox_and_spool_settings_are_refused(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings({name: value})


# --- the webhook with the database down ------------------------------------------------------


async def stored_bodies(h: Harness) -> list[str]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(InboundMessage.body).order_by(InboundMessage.id))).all())


async def outage_then_back(h: Harness, stop: Callable[[], None], start: Callable[[], None]) -> None:
    """One message before the outage, three during it (and a repeated delivery), then the check."""
    await h.make_user(PHONE)
    for n in range(4):
        h.llm.push_text(f"Réponse {n}.")
    await h.inbound(PHONE, "Question 0")
    await h.settle()
    assert await h.texts_to(PHONE) == ["Réponse 0."]

    [first] = h.twilio.sent
    stop()
    # Twilio reporting the first answer read: spooled too, recorded once the database is back.
    callback = {"MessageSid": first["Sid"], "MessageStatus": "read", "To": first["To"], "From": first["From"],
                "AccountSid": h.settings.twilio_account_sid}
    assert (await h.post_form("/twilio/status", callback))[0] == 200
    sids = []
    for n in (1, 2, 3):
        sid = f"SM{uuid.uuid4().hex}"
        sids.append(sid)
        status, body = await h.inbound(PHONE, f"Question {n}", sid=sid)
        assert status == 200 and "<Response" in body
    assert (await h.inbound(PHONE, "Question 2", sid=sids[1]))[0] == 200  # Twilio delivering it again
    spool = Path(h.settings.data_dir) / "spool"
    assert sum(len(p.read_bytes().splitlines()) for p in spool.glob("*.jsonl")) == 5
    start()

    async def all_answered() -> bool:
        return len(await h.texts_to(PHONE)) >= 4

    await eventually(all_answered)
    await h.settle()
    await asyncio.sleep(0.5)
    assert await stored_bodies(h) == ["Question 0", "Question 1", "Question 2", "Question 3"]
    assert await h.texts_to(PHONE) == ["Réponse 0.", "Réponse 1.", "Réponse 2.", "Réponse 3."]
    assert not list(spool.glob("*.jsonl"))
    async with h.services.sessions() as db:
        row = await db.scalar(select(OutboundMessage).where(OutboundMessage.sid == first["Sid"]))
        assert row is not None and row.status == "read"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """A PostgreSQL of this test's own, in a temporary directory."""

    def __init__(self) -> None:
        assert (PG_BIN / "initdb").exists() and (PG_BIN / "pg_ctl").exists(), (
            f"PostgreSQL server binaries are needed in {PG_BIN} (apt-get install postgresql-15, or PG_BIN)")
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="deblo-pg-"))
        self.data = self.root / "data"
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # initdb refuses to run as root
            self.as_user = ["runuser", "-u", "postgres", "--"]
            shutil.chown(self.root, "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run([*self.as_user, str(PG_BIN / tool), *args], capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, f"{tool} failed: {done.stdout}\n{done.stderr}"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        subprocess.run([*self.as_user, str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                        "stop"], capture_output=True, check=False, timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.remove()


@pytest.fixture
async def started(tmp_path: Path) -> Any:
    made: list[Harness] = []

    async def start(database: Database, **env: str) -> Harness:
        h = await start_harness(database, tmp_path / "data", f"spool:{uuid.uuid4().hex[:8]}:",
                                {**SPOOLING, **env})
        made.append(h)
        return h

    yield start
    for h in made:
        await h.close()


async def test_postgres_stopped_webhooks_are_kept_and_processed_in_order_once_back(
    own_postgres: PostgresServer, started: Any
) -> None:
    import asyncpg

    conn = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{own_postgres.port}/postgres", timeout=10)
    try:
        await conn.execute("CREATE DATABASE deblo")
    finally:
        await conn.close()
    url = f"postgresql+asyncpg://postgres@127.0.0.1:{own_postgres.port}/deblo"
    from bot.storage.migrate import upgrade

    await upgrade(url)
    h = await started(Database(url=url, kind="postgres"))
    await outage_then_back(h, own_postgres.stop, own_postgres.start)



async def test_pooled_connections_closed_by_a_postgres_restart_are_replaced_without_an_error(
    own_postgres: PostgresServer,
) -> None:
    """No ping per checkout (it costs three round trips per session): a connection the server closed
    is seen closed locally and replaced, so the first statements after a restart all succeed."""
    from sqlalchemy import text

    from bot.storage.db import make_engine

    engine = make_engine(f"postgresql+asyncpg://postgres@127.0.0.1:{own_postgres.port}/postgres")
    try:
        async def pids() -> set[int]:
            conns = [await engine.connect() for _ in range(3)]  # three pooled connections in use
            try:
                return {await c.scalar(text("SELECT pg_backend_pid()")) for c in conns}
            finally:
                for c in conns:
                    await c.close()

        before = await pids()
        own_postgres.stop()
        own_postgres.start()
        await asyncio.sleep(0.2)  # the close reaches each idle pooled connection's socket
        after = await pids()  # raises if a stale connection were handed out
        assert len(after) == 3 and not after & before
    finally:
        await engine.dispose()


async def test_sqlite_locked_webhooks_are_kept_and_processed_in_order_once_free(
    tmp_path: Path, started: Any
) -> None:
    template = await migrate_template("sqlite", tmp_path / "schema")
    database = await fresh_database("sqlite", template, tmp_path)
    h = await started(database)
    path = database.url.split(":///", 1)[1]
    holder: dict[str, sqlite3.Connection] = {}

    def lock() -> None:  # another process holding the single writer's lock
        holder["conn"] = sqlite3.connect(path, isolation_level=None, timeout=30)
        holder["conn"].execute("BEGIN EXCLUSIVE")

    def unlock() -> None:
        holder["conn"].execute("ROLLBACK")
        holder["conn"].close()

    await outage_then_back(h, lock, unlock)
