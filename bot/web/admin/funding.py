"""A class's pool of credits on its page: what it holds, what each student took, the days left at
the last week's pace, and an admin's form that funds it (bot.billing.pool; teachers see the pool,
never the form). A form is applied once: its nonce is the funding's ledger ref, so a double click
or a reload of the POST funds once."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from bot.billing import pool
from bot.services import Services
from bot.storage.models import Cohort

__all__ = ["MAX_FUND", "NONCE", "Funded", "PoolUse", "fund", "pool_use"]

NONCE = re.compile(r"[A-Za-z0-9_-]{16,64}")
PoolUse = pool.PoolUse
MAX_FUND = pool.MAX_FUND


@dataclass(frozen=True)
class Funded:
    """What a funding form did: `notice` (funded | again | bad_credits | bad_form), its HTTP status."""

    notice: str
    status: int


def _credits(raw: str) -> int | None:
    text = raw.strip().replace(" ", "").replace("\u202f", "").replace("\xa0", "")
    if not re.fullmatch(r"[0-9]{1,9}", text) or not 0 < int(text) <= pool.MAX_FUND:
        return None
    return int(text)


async def pool_use(db: AsyncSession, cohort: Cohort, services: Services) -> pool.PoolUse:
    return await pool.usage(db, cohort.id, services.clock())


async def fund(db: AsyncSession, services: Services, cohort: Cohort, form: dict[str, str],
               email: str) -> Funded:
    """Applies an admin's funding form to the class's pool (the caller commits)."""
    nonce = form.get("nonce", "")
    if not NONCE.fullmatch(nonce):
        return Funded("bad_form", 403)
    credits = _credits(form.get("credits", ""))
    if credits is None:
        return Funded("bad_credits", 422)
    after = await pool.fund(db, cohort.id, credits, services.clock(), ref=f"dashboard:{cohort.id}:{nonce}",
                            note=f"dashboard {email}"[:200])
    return Funded("again", 200) if after is None else Funded("funded", 200)
