"""A class's pool of credits: what a school puts in for its class (`cohorts fund`, the dashboard),
spent by the class's students before their own balance, at most CLASS_POOL_DAILY_CAP credits a day
per student (the student's day, in their time zone), so that one student cannot empty it for all.

The pool is an account of the one ledger: `cohorts.pool_balance` is its balance and every change is
a `credit_entries` row with `cohort_id` set and `balance_after` the pool's: `pool_fund` (no user:
the school's money) and `pool_<reason>` (the student who spent, under the reason their own charge
would have had: `pool_usage`, `pool_image_input`, …). A spend carries the ref of the charge it pays
for, so a charge asked twice (a replay) is taken once from either account (bot.billing.credits).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import case, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from bot.clock import Clock, zone
from bot.config import Settings
from bot.storage.models import Cohort, CohortMember, CreditEntry, User
from bot.texts import fr_en

__all__ = ["FUND_REASON", "MAX_FUND", "PACE_DAYS", "DailyCap", "PoolUse", "Standing", "daily_cap", "fund",
           "no_credits_text", "reason_of", "standing", "take", "usage"]

FUND_REASON = "pool_fund"
MAX_FUND = 1_000_000  # credits one funding may put in (a typo's extra zeros stop here)
PACE_DAYS = 7  # the days left are told at the pace of this many last days


def reason_of(reason: str) -> str:
    """The pool's reason for a charge's (`usage` → `pool_usage`)."""
    return f"pool_{reason}"[:32]


@dataclass(frozen=True)
class DailyCap:
    """How much one student may take from pools: `cap` credits a day of their zone."""

    cap: int
    zone: ZoneInfo
    clock: Clock

    def day_start(self) -> datetime:
        local = self.clock().astimezone(self.zone)
        return local.replace(hour=0, minute=0, second=0, microsecond=0)


def daily_cap(settings: Settings, user: User, clock: Clock) -> DailyCap:
    return DailyCap(max(0, settings.class_pool_daily_cap), zone(user.timezone, settings.default_timezone),
                    clock)


@dataclass(frozen=True)
class Standing:
    """A student's place in the pools: in a class or not, the credits of their best-funded class,
    what they took from pools today and the day's cap; and the classes themselves (id: name),
    read with the pools, which a turn's tools are given rather than reading them again."""

    in_class: bool
    pool: int
    used_today: int
    cap: int
    classes: dict[int, str] = field(default_factory=dict)

    @property
    def left(self) -> int:
        """What the student may still take from the pool today."""
        return max(0, min(self.pool, self.cap - self.used_today))


async def _used_since(db: AsyncSession, user_id: int, since: datetime) -> int:
    spent = await db.scalar(select(func.coalesce(func.sum(-CreditEntry.delta), 0)).where(
        CreditEntry.user_id == user_id, CreditEntry.cohort_id.is_not(None), CreditEntry.delta < 0,
        CreditEntry.created_at >= since))
    return int(spent or 0)


async def _best_pool(db: AsyncSession, user_id: int, *, lock: bool = False) -> tuple[int, int] | None:
    """(class id, pool) of the student's class with the most credits; None when in no class."""
    query = (select(Cohort.id, Cohort.pool_balance).join(CohortMember, CohortMember.cohort_id == Cohort.id)
             .where(CohortMember.user_id == user_id).order_by(Cohort.pool_balance.desc(), Cohort.id).limit(1))
    if lock:
        # Two students of one class spending at once take from the pool one after the other.
        query = query.with_for_update(of=Cohort)
    row = (await db.execute(query)).first()
    return (int(row[0]), int(row[1])) if row is not None else None


async def standing(db: AsyncSession, user_id: int, rule: DailyCap) -> Standing:
    rows = (await db.execute(select(Cohort.id, Cohort.name, Cohort.pool_balance)
                             .join(CohortMember, CohortMember.cohort_id == Cohort.id)
                             .where(CohortMember.user_id == user_id))).all()
    if not rows:
        return Standing(False, 0, 0, rule.cap)
    classes = {int(cohort_id): str(name) for cohort_id, name, _ in rows}
    best = max(int(balance) for _, _, balance in rows)  # as `_best_pool` orders them
    return Standing(True, max(0, best), await _used_since(db, user_id, rule.day_start()), rule.cap, classes)


async def take(db: AsyncSession, user_id: int, due: int, reason: str, ref: str | None, rule: DailyCap) -> int:
    """Takes up to `due` credits from the student's best-funded class, within what the day's cap
    leaves, and writes its ledger row; returns what was taken. The caller has looked for the ref
    and holds the student's row (bot.billing.credits.debit), so one student's charges come one
    after another and the day's count is right."""
    if due <= 0 or rule.cap <= 0:
        return 0
    best = await _best_pool(db, user_id, lock=True)
    if best is None or best[1] <= 0:
        return 0
    cohort_id, pool = best
    amount = min(due, pool, rule.cap - await _used_since(db, user_id, rule.day_start()))
    if amount <= 0:
        return 0
    after = await db.scalar(update(Cohort).where(Cohort.id == cohort_id)
                            .values(pool_balance=Cohort.pool_balance - amount).returning(Cohort.pool_balance))
    db.add(CreditEntry(user_id=user_id, cohort_id=cohort_id, delta=-amount, reason=reason_of(reason), ref=ref,
                       balance_after=int(after or 0), created_at=rule.clock()))
    await db.flush()
    return amount


async def fund(db: AsyncSession, cohort_id: int, credits: int, now: datetime, *, ref: str | None = None,
               note: str | None = None) -> int | None:
    """Puts `credits` (1 to MAX_FUND) in the class's pool, once per `ref`: the pool's new balance,
    or None when that ref was already funded."""
    if not 0 < credits <= MAX_FUND:
        raise ValueError(f"a funding is 1 to {MAX_FUND} credits")
    if ref is not None and await db.scalar(select(CreditEntry.id).where(
            CreditEntry.reason == FUND_REASON, CreditEntry.ref == ref)) is not None:
        return None
    try:
        async with db.begin_nested():
            after = await db.scalar(update(Cohort).where(Cohort.id == cohort_id)
                                    .values(pool_balance=Cohort.pool_balance + credits)
                                    .returning(Cohort.pool_balance))
            if after is None:
                raise LookupError(f"no class {cohort_id}")
            db.add(CreditEntry(user_id=None, cohort_id=cohort_id, delta=credits, reason=FUND_REASON, ref=ref,
                               note=note, balance_after=int(after), created_at=now))
            await db.flush()
    except IntegrityError:  # the same form posted twice at once: the unique (reason, ref) settles it
        return None
    return int(after)


@dataclass(frozen=True)
class PoolUse:
    """A class's pool as its page shows it: the balance, what was put in, what each student took
    (user id → (last PACE_DAYS days, all time)), and the days left at the last days' pace (None:
    nothing spent in those days)."""

    balance: int
    funded: int
    spent_recently: int
    per_student: dict[int, tuple[int, int]]
    days_left: int | None


async def usage(db: AsyncSession, cohort_id: int, now: datetime) -> PoolUse:
    balance = int(await db.scalar(select(Cohort.pool_balance).where(Cohort.id == cohort_id)) or 0)
    funded = int(await db.scalar(select(func.coalesce(func.sum(CreditEntry.delta), 0)).where(
        CreditEntry.cohort_id == cohort_id, CreditEntry.reason == FUND_REASON)) or 0)
    since = now - timedelta(days=PACE_DAYS)
    recent = case((CreditEntry.created_at >= since, -CreditEntry.delta), else_=0)
    rows = (await db.execute(
        select(CreditEntry.user_id, func.sum(recent), func.sum(-CreditEntry.delta))
        .where(CreditEntry.cohort_id == cohort_id, CreditEntry.user_id.is_not(None), CreditEntry.delta < 0)
        .group_by(CreditEntry.user_id))).all()
    per_student = {int(u): (int(week or 0), int(total or 0)) for u, week, total in rows}
    spent = sum(week for week, _total in per_student.values())
    days_left = int(balance * PACE_DAYS / spent) if spent > 0 else None
    return PoolUse(balance, funded, spent, per_student, days_left)


def no_credits_text(place: Standing, can_buy: bool, language: str | None) -> str:
    """What a user with nothing left to spend (their balance and their class's pool for today) is
    told at every message: what they can do, and ACHETER only when `can_buy` (payments are set up),
    never a way of paying that is not there. A student of a class is told « tu »; anyone else's
    text names no one (it reaches students, parents and pros alike)."""
    if place.in_class:
        return _class_pool_text(place, can_buy, language)
    if can_buy:
        return fr_en(language,
                     "Il ne reste plus de crédits, alors je ne peux pas répondre à ce message. Pour en "
                     "obtenir : **ACHETER**, et les offres s'affichent.",
                     "You have no credits left, so I can't answer this message. To get more, send **BUY**: "
                     "you'll see the packs.")
    return fr_en(language,
                 "Il ne reste plus de crédits, alors je ne peux pas répondre à ce message, et l'achat de "
                 "crédits n'est pas proposé ici pour le moment.",
                 "You have no credits left, so I can't answer this message, and buying credits is not "
                 "offered here for now.")


def _class_pool_text(place: Standing, can_buy: bool, language: str | None) -> str:
    """To a student of a class whose credits and class's pool are spent (for today or for good)."""
    buy_fr, buy_en = (" Tu peux aussi envoyer **ACHETER** pour acheter des crédits.",
                      " You can also send **BUY** to buy credits.") if can_buy else ("", "")
    if place.pool > 0:  # the day's cap: the pool is there again tomorrow
        return fr_en(language,
                     f"Tu as utilisé les {place.cap} crédits que ta classe t'offre chaque jour et tu n'as "
                     f"plus de crédits à toi : je te répondrai de nouveau demain.{buy_fr}",
                     f"You have used the {place.cap} credits your class gives you each day and have no "
                     f"credits of your own left: I'll answer you again tomorrow.{buy_en}")
    return fr_en(language,
                 "Tu n'as plus de crédits et ceux de ta classe sont épuisés, alors je ne peux pas "
                 f"répondre. Demande à ton enseignant de recharger les crédits de la classe.{buy_fr}",
                 "You have no credits left and your class's credits are used up, so I can't answer. "
                 f"Ask your teacher to top up the class's credits.{buy_en}")
