"""Database transactions and statements, counted on every engine the bot makes.

`watch(engine)` is called by `bot.storage.db` for each engine (the async one and the inbound
writer's blocking one), and `note` by what goes straight to a driver's connection: each
transaction begun and each statement sent to the database counts
into `deblo_db_transactions_total` and `deblo_db_statements_total`, and into the process's own
totals that `record()` reads for a window of work (a test's, a benchmark's):

    with counting.record() as counts:
        ...  # the work
    counts.transactions, counts.statements

Transactions are counted when they begin (a session that runs no statement begins none);
statements as the driver is asked to run them (an `executemany` is one).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter
from sqlalchemy import Engine, event

TRANSACTIONS = Counter("deblo_db_transactions_total", "Database transactions begun by this process")
STATEMENTS = Counter("deblo_db_statements_total", "Database statements sent by this process")


@dataclass
class Totals:
    """What this process counted since it started (or, from `record`, during a window)."""

    transactions: int = 0
    statements: int = 0


_totals = Totals()
_lock = threading.Lock()  # the inbound writer's thread counts too


def _on_begin(_conn: Any) -> None:
    with _lock:
        _totals.transactions += 1
    TRANSACTIONS.inc()


def _on_statement(*_args: Any) -> None:
    with _lock:
        _totals.statements += 1
    STATEMENTS.inc()


def note(transactions: int, statements: int) -> None:
    """Counts what was sent past SQLAlchemy, on a driver's connection (the inbound writer's one
    statement on PostgreSQL, bot.channel.inbound)."""
    with _lock:
        _totals.transactions += transactions
        _totals.statements += statements
    TRANSACTIONS.inc(transactions)
    STATEMENTS.inc(statements)


def watch(engine: Engine) -> None:
    """Counts this engine's transactions and statements (for an async engine: its `sync_engine`)."""
    if not event.contains(engine, "begin", _on_begin):
        event.listen(engine, "begin", _on_begin)
        event.listen(engine, "before_cursor_execute", _on_statement)


def totals() -> Totals:
    """The process's totals so far (a copy)."""
    with _lock:
        return Totals(_totals.transactions, _totals.statements)


@contextmanager
def record() -> Iterator[Totals]:
    """The transactions and statements counted while the block runs, in the object it yields
    (filled when the block ends; `since(start)` reads a window still open)."""
    window = Totals()
    start = totals()
    try:
        yield window
    finally:
        end = totals()
        window.transactions = end.transactions - start.transactions
        window.statements = end.statements - start.statements


def since(start: Totals) -> Totals:
    """What was counted since `start` (a `totals()` taken earlier)."""
    end = totals()
    return Totals(end.transactions - start.transactions, end.statements - start.statements)
