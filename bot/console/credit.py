"""The operator's credit and debit of one account (`python -m bot users credit`), through the
ledger: a bounded amount, never below 0 when taking back, and a note kept clean of control
characters (what a terminal would run as escapes, or a reader see reordered).
"""

from __future__ import annotations

import unicodedata
import uuid

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.accounts import AccountError
from bot.billing import credits
from bot.storage.models import CreditEntry, User

__all__ = ["MAX_OPERATOR_CREDIT", "OPERATOR_REASON", "clean_note", "credit"]

OPERATOR_REASON = "operator"
# The most credits one operator command moves: far above any pack or grant, so that a mistyped
# amount (an extra zero, a phone number pasted in the wrong place) is refused instead of applied.
MAX_OPERATOR_CREDIT = 100_000


def clean_note(note: str | None) -> str | None:
    """An operator's note as kept in the ledger: control and format characters (terminal escapes,
    NUL, bidirectional overrides) removed, spaces trimmed; None when nothing is left."""
    if note is None:
        return None
    kept = "".join(c for c in note if not unicodedata.category(c).startswith("C")).strip()
    return kept or None


async def credit(db: AsyncSession, user: User, amount: int, note: str | None) -> tuple[int, int]:
    """Adds `amount` (negative: takes back, never below 0). Returns (applied, new balance)."""
    if amount == 0:
        raise AccountError("N must not be 0")
    if abs(amount) > MAX_OPERATOR_CREDIT:
        raise AccountError(f"N must be at most {MAX_OPERATOR_CREDIT:,} credits either way".replace(",", " "))
    note = clean_note(note)
    if note is not None and len(note) > 200:
        raise AccountError("--reason must be at most 200 characters")
    # The row is locked (PostgreSQL) so that a turn charged meanwhile cannot take it below 0.
    current = int(await db.scalar(select(User.credit_balance).where(User.id == user.id).with_for_update())
                  or 0)
    applied = amount if amount > 0 else -min(-amount, current)
    if applied == 0:
        return 0, current
    ref = f"{OPERATOR_REASON}:{uuid.uuid4().hex}"
    balance = await credits.apply(db, user.id, applied, OPERATOR_REASON, ref=ref)
    assert balance is not None  # a fresh ref is never seen before
    if note:
        await db.execute(update(CreditEntry).where(CreditEntry.reason == OPERATOR_REASON,
                                                   CreditEntry.ref == ref).values(note=note))
    return applied, balance
