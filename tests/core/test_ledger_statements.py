"""A debit looks for its reference once: `debit` checks it, then writes the row without asking
again (bot.billing.credits), and a replay of the same reference takes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event, func, select

from bot.billing import credits
from bot.storage.models import CreditEntry
from tests.support.harness import Harness

PHONE = "+2250700000402"


@contextmanager
def statements(h: Harness) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(" ".join(statement.split()))

    engine = h.services.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def ledger_reads(seen: list[str]) -> list[str]:
    return [s for s in seen if s.startswith("SELECT") and "FROM credit_entries" in s]


async def test_a_debit_looks_for_its_reference_once_and_a_replay_takes_nothing(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, credit_balance=10)
    with statements(h) as seen:
        async with h.services.sessions() as db:
            assert await credits.debit(db, user.id, 3, "usage", "turn:1:call:1", overdraft=0) == (3, 7)
            await db.commit()
    assert len(ledger_reads(seen)) == 1, seen
    with statements(h) as seen:
        async with h.services.sessions() as db:
            assert await credits.debit(db, user.id, 3, "usage", "turn:1:call:1", overdraft=0) == (0, None)
            await db.commit()
    assert len(ledger_reads(seen)) == 1 and not [s for s in seen if s.startswith(("INSERT", "UPDATE"))]
    async with h.services.sessions() as db:
        assert await credits.balance(db, user.id) == 7
        rows = await db.scalar(select(func.count(CreditEntry.id)).where(CreditEntry.ref == "turn:1:call:1"))
    assert rows == 1
    # `apply` on its own still refuses a reference applied before.
    async with h.services.sessions() as db:
        assert await credits.apply(db, user.id, -1, "usage", "turn:1:call:1") is None
        assert await credits.apply(db, user.id, -1, "usage", "turn:1:call:2") == 6
        await db.commit()
