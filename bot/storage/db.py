"""The async engine and session factory, for SQLite (default) and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from sqlalchemy import CursorResult, Engine, Executable, Result, create_engine, event, exc
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.orm import ORMExecuteState, Session, SessionTransaction

from bot.storage import counting

# PostgreSQL connections per process. A turn holds one while it reads or writes, never across a model
# call (a step's settle ends even a transaction that only read), so that a worker's turns at once
# (WORKER_CONCURRENCY) and its background lane fit even when all of them are at the database.
POOL_SIZE = 20
POOL_OVERFLOW = 20


def make_engine(database_url: str) -> AsyncEngine:
    kwargs: dict[str, Any] = {}
    if database_url.startswith("sqlite"):
        path = database_url.split(":///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"] = {"timeout": 30}
    else:
        kwargs.update(pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW)
    engine = create_async_engine(database_url, **kwargs)
    counting.watch(engine.sync_engine)
    if not database_url.startswith("sqlite"):
        event.listen(engine.sync_engine, "checkout", _drop_if_closed)
    if database_url.startswith("sqlite"):
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


def make_sync_engine(database_url: str) -> Engine:
    """A blocking engine on the same SQLite file (the standard library's driver), for work that runs
    whole in a thread of its own: the inbound writer's batches."""
    url = database_url.replace("sqlite+aiosqlite:", "sqlite:", 1)
    engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
    event.listen(engine, "connect", _sqlite_pragmas)
    # Its commits leave the WAL to the writer's checkpoint thread (bot.channel.inbound).
    event.listen(engine, "connect", _no_autocheckpoint)
    counting.watch(engine)
    return engine


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # WAL lets the webhook write while a worker reads; foreign keys are off by default.
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def _no_autocheckpoint(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.execute("PRAGMA wal_autocheckpoint=0")


def _drop_if_closed(_dbapi_conn: Any, record: Any, _proxy: Any) -> None:
    """A pooled connection the server has closed (a restart, an idle timeout) is replaced at checkout.
    asyncpg sees the close on its socket, so this costs no round trip, where `pool_pre_ping` costs
    three per session (BEGIN, a ping, ROLLBACK): more than the statements of most sessions. A
    connection that breaks while in use fails its statement and the pool is renewed, as before."""
    driver = record.driver_connection
    if driver is not None and driver.is_closed():
        raise exc.DisconnectionError("connection closed by the server")  # the pool tries another


AT_COMMIT = "at_commit"  # session.info: statements `write_at_commit` left for the next commit


class _NotingSession(Session):
    """A session that notes whether it wrote since its last commit (`wrote`)."""


@event.listens_for(_NotingSession, "after_flush")
def _flushed(session: Session, _context: Any) -> None:
    session.info["wrote"] = True


@event.listens_for(_NotingSession, "do_orm_execute")
def _executed(state: ORMExecuteState) -> None:
    if not state.is_select:
        state.session.info["wrote"] = True


@event.listens_for(_NotingSession, "before_commit")
def _committing(session: Session) -> None:
    for statement in session.info.pop(AT_COMMIT, ()):
        session.execute(statement)


@event.listens_for(_NotingSession, "after_transaction_end")
def _ended(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:  # the session's own transaction, not a savepoint inside it
        session.info.pop("wrote", None)
        session.info.pop(AT_COMMIT, None)  # a rollback drops them


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False, sync_session_class=_NotingSession)


def wrote(db: AsyncSession) -> bool:
    """Whether the session wrote (or holds changes to flush) since its last commit or rollback."""
    return bool(db.info.get("wrote") or db.info.get(AT_COMMIT) or db.new or db.dirty or db.deleted)


def write_at_commit(db: AsyncSession, statement: Executable) -> None:
    """Runs `statement` in the session's next commit (or at `writes_due`), not now: a write that
    must not hold SQLite's one writer or a PostgreSQL row while the session's owner does other
    work that writes elsewhere. A rollback drops it."""
    db.info.setdefault(AT_COMMIT, []).append(statement)


async def writes_due(db: AsyncSession) -> None:
    """Runs now what `write_at_commit` left for the next commit (a statement that reads it follows)."""
    for statement in db.info.pop(AT_COMMIT, ()):
        await db.execute(statement)


async def commit_writes(db: AsyncSession) -> None:
    """Commits what the session wrote; a session that only read keeps its transaction open, so
    the reads that follow share it instead of beginning one of their own. On SQLite a read holds
    no lock (the driver begins a transaction at the first write), and on PostgreSQL a read
    committed transaction that only read holds none either."""
    if wrote(db):
        await db.commit()


def rowcount(result: Result[Any]) -> int:
    """The rows an UPDATE or DELETE matched. `AsyncSession.execute` is typed to answer a `Result`,
    but for those statements it is a `CursorResult`, the type that carries `rowcount`."""
    return cast(CursorResult[Any], result).rowcount


def is_sqlite(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "sqlite"
