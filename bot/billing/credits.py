"""The credit ledger: every change of a balance is a row with its reason.

A `ref` makes a change idempotent: the same (reason, ref) is applied once however often it is
asked for (a payment webhook delivered twice, a turn retried after a crash).

Every debit of a turn (its tokens, for a message's turn and a background job alike, the images the
model saw, the audio heard, the speech spoken) goes through `debit`, which never takes a balance
below `-TURN_OVERDRAFT_CREDITS`; payments, operator credits and bonus awards use `apply` directly.

Beside credits, USER_DAILY_TOKEN_LIMIT caps the tokens one user's turns use per day, the day of
the user's time zone (`DailyTokens`, counted in the shared state as each model call returns and as
media are charged).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import false, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.util import identity_key

from bot.agent.loop import Budget
from bot.billing import pool
from bot.clock import Clock, zone
from bot.config import Settings
from bot.storage.models import CreditEntry, InboundMessage, User

log = logging.getLogger(__name__)


async def apply(
    db: AsyncSession, user_id: int, delta: int, reason: str, ref: str | None = None
) -> int | None:
    """Adds `delta` (negative to charge) to the balance and writes the ledger row.

    Returns the new balance, or None when (reason, ref) was already applied. The balance update is
    one atomic UPDATE so that concurrent changes of the same user never lose each other.
    """
    if ref is not None and await _applied(db, reason, ref):
        return None
    return await _apply_unseen(db, user_id, delta, reason, ref)


async def _applied(db: AsyncSession, reason: str, ref: str, *more_reasons: str) -> bool:
    """Whether (reason, ref) is in the ledger, or (any of `more_reasons`, ref): one query."""
    return await db.scalar(_applied_query(reason, ref, *more_reasons).limit(1)) is not None


def _applied_query(reason: str, ref: str, *more_reasons: str) -> Any:
    reasons = (reason, *more_reasons)
    return select(CreditEntry.id).where(
        CreditEntry.reason.in_(reasons) if more_reasons else CreditEntry.reason == reason,
        CreditEntry.ref == ref)


async def _apply_unseen(db: AsyncSession, user_id: int, delta: int, reason: str,
                        ref: str | None) -> int | None:
    """`apply` once (reason, ref) was looked for and not found: the unique index still settles a
    race with another process."""
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
    _note_balance(db, user_id, int(balance))
    return int(balance)


def _note_balance(db: AsyncSession, user_id: int, balance: int) -> None:
    """The new balance on the session's copy of the user, when it holds one: what the message's
    handlers read next (the turn's gate) is the balance as this session left it."""
    held = db.identity_map.get(identity_key(User, user_id))
    if held is not None:
        set_committed_value(held, "credit_balance", balance)


async def balance(db: AsyncSession, user_id: int) -> int:
    return int(await db.scalar(select(User.credit_balance).where(User.id == user_id)) or 0)


_balance = balance  # for `open_meter`, whose argument of that name is a value


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


async def debit(db: AsyncSession, user_id: int, due: int, reason: str, ref: str | None, *,
                overdraft: int, detail: dict[str, Any] | None = None,
                pool_cap: pool.DailyCap | None = None) -> tuple[int, int | None]:
    """The one way what a turn spends reaches the ledger (its tokens, the images the model saw, the
    audio heard, the speech spoken): `due` credits under `reason`, once per `ref`, first from the
    student's class pool within `pool_cap` (bot.billing.pool), then from the balance, below zero
    down to `-overdraft` and not further. What cannot be taken is logged (with `detail`) and not
    asked again. Returns (credits taken, new balance or None)."""
    if due <= 0:
        return 0, None
    # The row stays locked (PostgreSQL) until the caller commits: two debits of one user at once
    # (a background job and a new message's turn) read the balance one after the other. Whether the
    # ref was charged is read with it.
    seen = _applied_query(reason, ref, pool.reason_of(reason)).exists() if ref is not None else false()
    found = (await db.execute(select(User.credit_balance, seen).where(User.id == user_id)
                              .with_for_update(of=User))).first()
    if found is not None and found[1]:
        return 0, None  # already charged (a replay): neither taken again nor logged as cut
    current = int(found[0] or 0) if found is not None else 0
    # A student of a funded class spends the class's pool first, within the day's cap.
    from_pool = await pool.take(db, user_id, due, reason, ref, pool_cap) if pool_cap is not None else 0
    if from_pool == due:
        return from_pool, current
    taken, new_balance = await _debit_own(db, user_id, due - from_pool, reason, ref, current, overdraft,
                                          detail)
    return from_pool + taken, new_balance


async def _debit_own(db: AsyncSession, user_id: int, due: int, reason: str, ref: str | None, current: int,
                     overdraft: int, detail: dict[str, Any] | None) -> tuple[int, int | None]:
    """`debit`'s part from the user's own balance, whose row it holds (`current`)."""
    taken = min(due, max(0, current + max(0, overdraft)))
    if taken < due:
        log.warning(
            "a turn spent more than the balance and overdraft allow",
            extra={"user_id": user_id, "reason": reason, **(detail or {}), "due": due, "charged": taken,
                   "uncharged": due - taken},
        )
    if taken == 0:
        return 0, current
    new_balance = await _take_own(db, user_id, taken, reason, ref)  # its ref looked for above
    return (taken if new_balance is not None else 0), new_balance


async def _take_own(db: AsyncSession, user_id: int, taken: int, reason: str, ref: str | None) -> int | None:
    """Takes `taken` credits from the balance whose row the caller holds, with its ledger row: two
    statements, no savepoint. The ledger row is inserted unless (reason, ref) is already there (the
    unique index: a race with another process that `_applied` could not see), and then the balance
    is given back. The new balance, or None when the ref was taken first."""
    new_balance = await db.scalar(update(User).where(User.id == user_id)
                                  .values(credit_balance=User.credit_balance - taken)
                                  .returning(User.credit_balance))
    if new_balance is None:
        raise LookupError(f"no user {user_id}")
    insert = pg_insert if db.get_bind().dialect.name == "postgresql" else sqlite_insert
    entry = await db.scalar(insert(CreditEntry).values(
        user_id=user_id, delta=-taken, reason=reason, ref=ref, balance_after=new_balance)
        .on_conflict_do_nothing(index_elements=["reason", "ref"])
        .returning(CreditEntry.id))
    if entry is None:
        await db.execute(update(User).where(User.id == user_id)
                         .values(credit_balance=User.credit_balance + taken))
        return None
    _note_balance(db, user_id, int(new_balance))
    return int(new_balance)


async def charge_turn(
    db: AsyncSession,
    user_id: int,
    total_tokens: int,
    tokens_per_credit: int,
    ref: str | None,
    *,
    overdraft: int = 0,
    already_charged: int = 0,
    pool_cap: pool.DailyCap | None = None,
) -> tuple[int, int | None]:
    """Charges what a turn's model calls spent beyond `already_charged` (reason `usage`): (credits
    charged, new balance or None), through `debit` and its floor. The turn's budget stops the turn
    before the floor, so a charge cut there means a model call used far more than estimated."""
    due = turn_cost(total_tokens, tokens_per_credit) - already_charged
    return await debit(db, user_id, due, "usage", ref, overdraft=overdraft, detail={"tokens": total_tokens},
                       pool_cap=pool_cap)


async def charge_media(db: AsyncSession, user: User, settings: Settings, reason: str, due: int,
                       ref: str, daily: DailyTokens | None, clock: Clock) -> int:
    """Charges a turn's media (`image_input`, `audio_input`, `speech_output`): `due` credits through
    `debit` (a class's pool first), down to the same floor as the tokens (`-TURN_OVERDRAFT_CREDITS`);
    guests are not charged. The media count into the user's day (`daily`) as `due` x
    TOKENS_PER_CREDIT tokens, guests' too, once per `ref`. Returns the credits taken."""
    if due <= 0:
        return 0
    if daily is not None:
        await daily.add(due * max(1, settings.tokens_per_credit), ref)
    if (user.mode or "guest") == "guest":
        return 0
    taken, _ = await debit(db, user.id, due, reason, ref, overdraft=max(0, settings.turn_overdraft_credits),
                           pool_cap=pool.daily_cap(settings, user, clock))
    return taken


@dataclass
class TurnMeter:
    """Charges a turn as it spends, after each model call, so that a turn cut short (a crash, even
    after it replied) is paid for what it used; and says how many tokens the turn may still use.

    The direct turn and the background job are charged by the same meter, down to the same floor
    (`-TURN_OVERDRAFT_CREDITS`); only their ledger refs differ: `ref_for(cost)` names a charge
    ("turn:<inbound id>:<attempt>:<cost>" for a message's turn, "job:<id>:call:<n>" for a job's
    model call), so that a charge asked twice (a replay) is taken once."""

    user_id: int
    tokens_per_credit: int
    overdraft: int
    ceiling_tokens: int  # what the balance and the overdraft pay for, counted from the turn's start
    ref_for: Callable[[int], str | None]
    tokens: int = 0  # what the turn spent so far (a resumed job starts with the direct part's)
    charged: int = 0  # credits asked for so far
    pool_cap: pool.DailyCap | None = None  # a student of a funded class spends its pool first

    async def spend(self, db: AsyncSession, tokens: int, *, commit: bool = True) -> None:
        """Charges what the turn spent beyond what was charged. Without `commit` the charge is left
        in `db` for the caller to commit (with the answer it paid for, or `Budget.settle`)."""
        self.tokens += max(0, tokens)
        cost = turn_cost(self.tokens, self.tokens_per_credit)
        if cost <= self.charged:
            return
        await charge_turn(db, self.user_id, self.tokens, self.tokens_per_credit, self.ref_for(cost),
                          overdraft=self.overdraft, already_charged=self.charged, pool_cap=self.pool_cap)
        # What could not be taken (the overdraft floor) is not asked again at the next call.
        self.charged = cost
        if commit:
            # Even when nothing was taken: `debit` locked the user's row, and tools that credit the
            # user in their own sessions (bonus awards) must not wait for the end of the step.
            await db.commit()


async def open_meter(db: AsyncSession, user_id: int, settings: Settings,
                     ref_for: Callable[[int], str | None], spent_tokens: int = 0,
                     pool_cap: pool.DailyCap | None = None, balance: int | None = None,
                     place: pool.Standing | None = None) -> TurnMeter:
    """A meter for a turn that has already spent `spent_tokens` (and was charged for them); what it
    may spend counts what the student may still take from their class's pool today. `balance`: the
    user's as the caller just read it (else read here); `place`: the student's standing under
    `pool_cap`, when the caller read it. A user in no class is charged without looking for a pool
    again."""
    current = balance if balance is not None else await _balance(db, user_id)
    if place is None and pool_cap is not None:
        place = await pool.standing(db, user_id, pool_cap)
    from_pool = place.left if place is not None else 0
    if place is not None and not place.in_class:
        pool_cap = None
    per = max(1, settings.tokens_per_credit)
    overdraft = max(0, settings.turn_overdraft_credits)
    ceiling = spent_tokens + (from_pool + max(0, current + overdraft)) * per
    charged = turn_cost(spent_tokens, per) if spent_tokens > 0 else 0
    return TurnMeter(user_id, per, overdraft, ceiling, ref_for, spent_tokens, charged, pool_cap)


DAILY_LIMIT_TEXT = {
    "fr": "Je m'arrête ici pour aujourd'hui : la limite d'utilisation du jour est atteinte. "
    "Je répondrai de nouveau demain.",
    "en": "I'm stopping here for today: you have reached the day's usage limit. "
    "I'll answer you again tomorrow.",
}


@dataclass
class DailyTokens:
    """The tokens one user's turns used today against USER_DAILY_TOKEN_LIMIT, in the shared state
    (one key per user and local day, so every process counts in the same place). Every kind of
    spending counts: the model calls' tokens, and the media (images, audio heard, speech spoken) as
    TOKENS_PER_CREDIT tokens per credit they cost (`charge_media`), so that photos and voice notes
    do not go past the day's limit either."""

    state: Any
    key: str
    limit: int

    async def used(self) -> int:
        return int(await self.state.kv_get(self.key) or 0)

    async def left(self) -> int:
        return max(0, self.limit - await self.used())

    async def add(self, tokens: int, ref: str | None = None) -> None:
        """Counts `tokens` into the day; with `ref` (one model call), once per ref, as the ledger
        charges it once: a step replayed after a crash does not count against the user twice."""
        if tokens <= 0:
            return
        try:
            if ref is not None and not await self.state.set_if_absent(f"{self.key}:{ref}", "1", 36 * 3600):
                return
            await self.state.incr(self.key, 36 * 3600, tokens)
        except Exception:  # a limit, not the ledger: the turn goes on with the state away
            log.warning("could not count a user's tokens of the day", extra={"key": self.key})


def token_day(settings: Settings, user: User, now: datetime) -> str:
    """The user's day (their time zone, else DEFAULT_TIMEZONE) that the daily ceiling counts."""
    return now.astimezone(zone(user.timezone, settings.default_timezone)).strftime("%Y-%m-%d")


def daily_tokens(state: Any, settings: Settings, user: User, now: datetime) -> DailyTokens | None:
    """The user's tokens of the day; None when USER_DAILY_TOKEN_LIMIT is 0 (no ceiling)."""
    if settings.user_daily_token_limit <= 0:
        return None
    key = f"tokens:day:{user.id}:{token_day(settings, user, now)}"
    return DailyTokens(state, key, settings.user_daily_token_limit)


# The turn's end when the credits run out and nothing is for sale: the loop's own text says ACHETER.
NO_SALE_TEXT = {
    "fr": "Je m'arrête ici : continuer coûterait plus que les crédits qui restent. **NOUVEAU** "
    "pour repartir d'une conversation plus courte, qui coûte moins.",
    "en": "I have to stop here: going on would cost more than the credits you have left. Send **NEW** to "
    "start a shorter conversation, which costs less.",
}


def credits_notice(settings: Settings) -> dict[str, str] | None:
    """What a turn ends with when the credits run out: the loop's (ACHETER) when payments are set up
    (PAYMENT_PROVIDER; ACHETER itself says when they are set up wrong), else NO_SALE_TEXT."""
    return None if settings.payment_provider else NO_SALE_TEXT


def within_today(ceiling: int | None, spend: Any, daily: DailyTokens | None, left: int,
                 call_ref: Callable[[], str] | None = None, settle: Any = None,
                 notice: dict[str, str] | None = None) -> Budget:
    """A budget of `ceiling` tokens (None: no other ceiling) that never goes past `left`, what is
    left of the user's day, and counts what each call used into the day (once per `call_ref()`,
    the call's own reference, when given); `notice` is said when the credits' ceiling is reached."""
    if daily is None:
        return Budget(ceiling, spend, notice, settle=settle)

    async def spend_today(tokens: int) -> None:
        if spend is not None:
            await spend(tokens)
        await daily.add(tokens, call_ref() if call_ref is not None else None)

    # When the day runs out first, the turn ends saying so rather than speaking of credits.
    first = ceiling is None or left < ceiling
    return Budget(left if first else ceiling, spend_today, DAILY_LIMIT_TEXT if first else notice, settle)


async def turn_budget(db: AsyncSession, user: User, inbound: InboundMessage | None,
                      settings: Settings, daily: DailyTokens | None, clock: Clock, *,
                      balance: int | None = None, place: pool.Standing | None = None) -> Budget | None:
    """The budget of a message's turn, charged to the ledger in `db` as the turn spends, within what
    is left of the user's day (`daily`). Guests are served within their daily allowance and not
    charged: without a daily ceiling their budget is None. A call's charge is committed with what
    `db` commits next: the answer it paid for (one transaction), else `Budget.settle` before
    tools or the next call. `balance`: the user's, when the caller read it in this transaction;
    `place`: their standing in the pools under `pool.daily_cap`, likewise."""
    left = await daily.left() if daily is not None else 0
    if (user.mode or "guest") == "guest":
        return None if daily is None else within_today(None, None, daily, left)
    # The attempt keeps the refs of a re-run apart from those of the run it replaces.
    base = f"turn:{inbound.id}:{inbound.attempts}" if inbound is not None else None
    meter = await open_meter(db, user.id, settings, lambda cost: f"{base}:{cost}" if base else None,
                             pool_cap=pool.daily_cap(settings, user, clock), balance=balance, place=place)

    async def spend(tokens: int) -> None:
        await meter.spend(db, tokens, commit=False)

    async def settle() -> None:
        # A transaction that only read ends too: the reads of a step's read-only tools would keep
        # it open, and a pool connection taken, across the next model call. With 32 turns a worker
        # and four workers, PostgreSQL's 100 connections ran out.
        if db.in_transaction():
            await db.commit()

    return within_today(meter.ceiling_tokens, spend, daily, left, settle=settle,
                        notice=credits_notice(settings))


async def job_budget(sessions: Callable[[], AsyncSession], user: User, settings: Settings,
                     daily: DailyTokens | None, job_id: int, spent_tokens: int,
                     model_calls: Callable[[], int], clock: Clock) -> Budget | None:
    """The budget of a background job going on from a turn that spent `spent_tokens`: the same
    meter as a message's turn, each charge in a session of its own and named by the job's model
    call (`model_calls()`, the calls made so far, this one included), so that a step replayed after
    a crash is charged and counted into the day once."""
    left = spent_tokens + (await daily.left() if daily is not None else 0)

    def call_ref() -> str:
        return f"job:{job_id}:call:{model_calls()}"

    if (user.mode or "guest") == "guest":
        return None if daily is None else within_today(None, None, daily, left, call_ref)
    async with sessions() as db:
        meter = await open_meter(db, user.id, settings, lambda _cost: call_ref(), spent_tokens,
                                 pool.daily_cap(settings, user, clock))

    async def spend(tokens: int) -> None:
        async with sessions() as db:
            await meter.spend(db, tokens)

    return within_today(meter.ceiling_tokens, spend, daily, left, call_ref, notice=credits_notice(settings))


async def guest_message_allowed(state: Any, user_id: int, day: str, limit: int) -> bool:
    """Counts a guest's messages of the day (shared state); False once over the free allowance."""
    count = await state.incr(f"guest_msgs:{user_id}:{day}", 36 * 3600)
    return int(count) <= limit
