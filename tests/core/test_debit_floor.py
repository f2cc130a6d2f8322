"""Two debits of one user at once (a background job's model call and a new message's photos) both
stop at -TURN_OVERDRAFT_CREDITS: the second reads the balance the first left, not the one before.
PostgreSQL only: there the two run in separate connections at the same time; SQLite has one writer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import func, select, text

from bot.billing import credits
from bot.storage.models import CreditEntry

pytestmark = pytest.mark.postgres_only

PHONE = "+2250700000401"


async def _waiting_on_a_lock(h: Any) -> bool:
    async with h.services.sessions() as db:
        waiting = await db.scalar(text("SELECT count(*) FROM pg_stat_activity "
                                       "WHERE wait_event_type = 'Lock' AND datname = current_database()"))
        return bool(waiting)


async def test_two_debits_at_once_stop_at_the_floor_together(make_harness: Any) -> None:
    h = await make_harness(TURN_OVERDRAFT_CREDITS="5")
    user = await h.make_user(PHONE, credit_balance=3)
    async with h.services.sessions() as first:
        taken, after = await credits.debit(first, user.id, 6, "usage", "job:1:call:1", overdraft=5)
        assert (taken, after) == (6, -3)

        async def second() -> tuple[int, int | None]:
            async with h.services.sessions() as db:
                result = await credits.debit(db, user.id, 6, "image_input", "image:1:0", overdraft=5)
                await db.commit()
                return result

        other = asyncio.create_task(second())
        while not await _waiting_on_a_lock(h):  # the second debit waits for the first's commit
            assert not other.done(), other.result()
            await asyncio.sleep(0.02)
        await first.commit()
    assert await other == (2, -5)  # only what the floor leaves after the first debit
    async with h.services.sessions() as db:
        assert await credits.balance(db, user.id) == -5
        deltas = await db.scalar(select(func.sum(CreditEntry.delta)).where(
            CreditEntry.user_id == user.id, CreditEntry.reason != "signup"))
    assert deltas == -8
