"""`python -m bot cohorts fund NAME CREDITS`: a school puts credits in its class's pool
(bot.billing.pool), and the pool's line of `cohorts show`. The credits are checked before the
database is touched (exit 2, nothing changed); a class that is not there is exit code 1."""

from __future__ import annotations

import re
from typing import Any

from bot.billing import pool
from bot.console.cohort_errors import no_class
from bot.texts import fr_en

__all__ = ["credits_problem", "fund", "pool_line"]


def credits_problem(lang: str, raw: str) -> str | None:
    """Why CREDITS is not a funding (a whole number from 1 to pool.MAX_FUND), or None."""
    text = raw.strip().replace("_", "")
    if not re.fullmatch(r"[0-9]{1,9}", text) or not 0 < int(text) <= pool.MAX_FUND:
        return fr_en(lang, f"CREDITS est un nombre entier de crédits de 1 à {pool.MAX_FUND}, reçu {raw!r}",
                     f"CREDITS is a whole number of credits from 1 to {pool.MAX_FUND}, got {raw!r}")
    return None


async def fund(services: Any, lang: str, name: str, credits: int) -> int:
    from bot.school.classes import find_cohort

    now = services.clock()
    async with services.sessions() as db:
        cohort = await find_cohort(db, name)
        if cohort is None:
            return no_class(lang, name)
        after = await pool.fund(db, cohort.id, credits, now, note="cohorts fund")
        await db.commit()
    cap = services.settings.class_pool_daily_cap
    print(fr_en(lang, f"classe {name!r} : +{credits} crédit(s) dans sa réserve, maintenant {after} ; chaque "
                      f"élève y prend au plus {cap} par jour avant ses propres crédits",
                f"class {name!r}: +{credits} credit(s) in its pool, now {after}; each student spends from it "
                f"at most {cap} a day before their own credits"))
    return 0


async def pool_line(db: Any, lang: str, cohort_id: int, now: Any) -> str:
    """`pool: 460 credit(s) of 500 put in; 40 spent in the last 7 days, about 80 day(s) left at that pace`
    (`réserve : …` in French)."""
    use = await pool.usage(db, cohort_id, now)
    days = pool.PACE_DAYS
    head = fr_en(lang, f"réserve : {use.balance} crédit(s) sur {use.funded} versés",
                 f"pool: {use.balance} credit(s) of {use.funded} put in")
    if use.days_left is None:
        return head + fr_en(lang, f" ; rien de dépensé ces {days} derniers jours",
                            f"; nothing spent in the last {days} days")
    return head + fr_en(lang, f" ; {use.spent_recently} dépensé(s) ces {days} derniers jours, environ "
                              f"{use.days_left} jour(s) restant(s) à ce rythme",
                        f"; {use.spent_recently} spent in the last {days} days, about {use.days_left} "
                        "day(s) left at that pace")
