"""The credit ledger: every change of a balance is a row with its reason.

A `ref` makes a change idempotent: the same (reason, ref) is applied once however often it is
asked for (a payment webhook delivered twice, a turn retried after a crash).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from bot.models import CreditEntry, User


async def apply(
    db: AsyncSession, user_id: int, delta: int, reason: str, ref: str | None = None
) -> int | None:
    """Adds `delta` (negative to charge) to the balance and writes the ledger row.

    Returns the new balance, or None when (reason, ref) was already applied. The balance update is
    one atomic UPDATE so that concurrent changes of the same user never lose each other.
    """
    if ref is not None:
        seen = await db.scalar(
            select(CreditEntry.id).where(CreditEntry.reason == reason, CreditEntry.ref == ref)
        )
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


def turn_cost(total_tokens: int, tokens_per_credit: int) -> int:
    """Credits one turn costs: every started block of TOKENS_PER_CREDIT tokens, at least one."""
    per = max(1, tokens_per_credit)
    return max(1, -(-max(0, total_tokens) // per))


async def charge_turn(
    db: AsyncSession, user_id: int, total_tokens: int, tokens_per_credit: int, ref: str | None
) -> tuple[int, int | None]:
    """Charges a turn's token usage once per `ref`: (credits charged, new balance or None if seen).

    The charge never takes the balance below zero: a turn that was allowed to start is paid with
    what is left, and the next message is refused until the user buys credits.
    """
    cost = turn_cost(total_tokens, tokens_per_credit)
    current = await balance(db, user_id)
    charged = min(cost, max(0, current))
    if charged == 0:
        return 0, current
    new_balance = await apply(db, user_id, -charged, "usage", ref)
    return (charged if new_balance is not None else 0), new_balance


async def guest_message_allowed(state: Any, user_id: int, day: str, limit: int) -> bool:
    """Counts a guest's messages of the day (shared state); False once over the free allowance."""
    count = await state.incr(f"guest_msgs:{user_id}:{day}", 36 * 3600)
    return int(count) <= limit
