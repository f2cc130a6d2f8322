"""The async engine and session factory, for SQLite (default) and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from sqlalchemy import CursorResult, Engine, Result, create_engine, event, exc
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from bot.storage import counting


def make_engine(database_url: str) -> AsyncEngine:
    kwargs: dict[str, Any] = {}
    if database_url.startswith("sqlite"):
        path = database_url.split(":///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"] = {"timeout": 30}
    else:
        kwargs.update(pool_size=20, max_overflow=20)
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


def _drop_if_closed(_dbapi_conn: Any, record: Any, _proxy: Any) -> None:
    """A pooled connection the server has closed (a restart, an idle timeout) is replaced at checkout.
    asyncpg sees the close on its socket, so this costs no round trip, where `pool_pre_ping` costs
    three per session (BEGIN, a ping, ROLLBACK): more than the statements of most sessions. A
    connection that breaks while in use fails its statement and the pool is renewed, as before."""
    driver = record.driver_connection
    if driver is not None and driver.is_closed():
        raise exc.DisconnectionError("connection closed by the server")  # the pool tries another


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


def rowcount(result: Result[Any]) -> int:
    """The rows an UPDATE or DELETE matched. `AsyncSession.execute` is typed to answer a `Result`,
    but for those statements it is a `CursorResult`, the type that carries `rowcount`."""
    return cast(CursorResult[Any], result).rowcount


def is_sqlite(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "sqlite"
