"""The credit ledger: every change of a balance is a row with its reason.

A `ref` makes a change idempotent: the same (reason, ref) is applied once however often it is
asked for (a payment webhook delivered twice, a turn retried after a crash).
"""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from bot.models import CreditEntry, User


async def apply(db: AsyncSession, user_id: int, delta: int, reason: str, ref: str | None = None) -> int | None:
    """Adds `delta` (negative to charge) to the balance and writes the ledger row.

    Returns the new balance, or None when (reason, ref) was already applied. The balance update is
    one atomic UPDATE so that concurrent changes of the same user never lose each other.
    """
    if ref is not None:
        seen = await db.scalar(select(CreditEntry.id).where(CreditEntry.reason == reason, CreditEntry.ref == ref))
        if seen is not None:
            return None
    try:
        return await _apply_row(db, user_id, delta, reason, ref)
    except IntegrityError:
        # Another process applied the same (reason, ref) first; the savepoint undid ours.
        return None


async def _apply_row(db: AsyncSession, user_id: int, delta: int, reason: str, ref: str | None) -> int:
    async with db.begin_nested():
        balance = await db.scalar(
            update(User)
            .where(User.id == user_id)
            .values(credit_balance=User.credit_balance + delta)
            .returning(User.credit_balance)
        )
        if balance is None:
            raise LookupError(f"no user {user_id}")
        db.add(CreditEntry(user_id=user_id, delta=delta, reason=reason, ref=ref, balance_after=balance))
        await db.flush()
    return int(balance)


async def balance(db: AsyncSession, user_id: int) -> int:
    return int(await db.scalar(select(User.credit_balance).where(User.id == user_id)) or 0)


async def total_since(db: AsyncSession, user_id: int, reason: str, since: object) -> tuple[int, int]:
    """(number of entries, sum of deltas) for one reason since a time: daily caps use it."""
    row = (
        await db.execute(
            select(func.count(CreditEntry.id), func.coalesce(func.sum(CreditEntry.delta), 0)).where(
                CreditEntry.user_id == user_id, CreditEntry.reason == reason, CreditEntry.created_at >= since
            )
        )
    ).one()
    return int(row[0]), int(row[1])
