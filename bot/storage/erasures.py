"""The record of erased numbers (`bot.storage.models.Erasure`): what `users forget` and SUPPRIMER
leave behind so that a webhook of the person received before the erasure, still in the spool
(set aside in dead.jsonl, or waiting for the database), is never stored again by `spool retry` or
the spool's replay: that would bring back a row, a user and the bot's answer to them.

A number is kept as its HMAC-SHA256 under SECRET_KEY, never in clear: phone numbers are few enough
that a plain hash of one is read back by trying them all. A new SECRET_KEY forgets the record
(nothing older can match it), which costs only its guard over what was spooled before.
A person who writes again after their erasure is new: what they send after it is stored as usual.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.storage.models import Erasure

__all__ = ["erased_since", "erasure_key", "record_erasure"]


def erasure_key(secret_key: str, address: str) -> str:
    return hmac.new(secret_key.encode(), b"erased-address:" + address.encode(), hashlib.sha256).hexdigest()


async def record_erasure(db: AsyncSession, secret_key: str, addresses: Iterable[str | None],
                         now: datetime) -> None:
    """Adds the person's addresses (number, WhatsApp id) in the caller's transaction."""
    for address in sorted({a for a in addresses if a}):
        db.add(Erasure(key_hash=erasure_key(secret_key, address), erased_at=now))
    await db.flush()


async def erased_since(db: AsyncSession, secret_key: str, addresses: Iterable[str],
                       received_at: datetime) -> bool:
    """Whether any of these addresses was erased at or after `received_at`: what came from or went
    to it then belongs to a person who is gone."""
    keys = sorted({erasure_key(secret_key, a) for a in addresses if a})
    if not keys:
        return False
    found = await db.scalar(select(Erasure.id).where(Erasure.key_hash.in_(keys),
                                                     Erasure.erased_at >= received_at).limit(1))
    return found is not None
