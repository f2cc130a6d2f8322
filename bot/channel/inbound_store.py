"""One batch of inbound webhooks written in one transaction: who sent each, and its row.

Plain synchronous SQLAlchemy Core over a `Connection`, so that one batch is one call whatever the
driver: on SQLite the writer runs it in its own thread over its own connection (one thread hop per
batch instead of three per statement through aiosqlite), on PostgreSQL through
`AsyncConnection.run_sync`, or, for a batch of known senders, as one statement of its own
(`PG_ONE_STATEMENT`, `one_statement`, run by the writer on the driver's connection). The
statements are built once (`Statements`): a statement object reused keeps its compiled form and
cache key, where one built per batch costs more Python than the database's work on it.

On SQLite the two statements every batch runs (the rows, the senders' delivery health) are sent as
SQL text with the values already in SQLite's form (`exec_driver_sql`): Core's per-row parameter
processing cost more than SQLite's own work on the row. The rows they write are the same as Core's
(tests/core/test_inbound_store.py compares the two).
"""

from __future__ import annotations

import functools
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Connection, bindparam, literal_column, null, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from bot.channel.keywords import is_stop
from bot.channel.locale import Locale, locale_for
from bot.channel.metering import inbound_micro
from bot.channel.prices import RateTable
from bot.storage.models import InboundMessage, User


@dataclass
class InboundParams:
    """What a webhook says (bot.channel.inbound.parse_params), as a batch stores it."""
    message_sid: str
    channel: str  # whatsapp | sms
    from_addr: str
    to_addr: str
    body: str
    phone: str | None  # E.164 when the sender's number is known
    external_id: str | None  # WhatsApp BSUID
    profile_name: str | None
    media: list[dict[str, str]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)


_USERS = User.__table__
_INBOUND = InboundMessage.__table__


Items = Sequence[tuple[InboundParams, datetime]]  # the batch's webhooks, each with its arrival time


@dataclass
class KnownUser:
    id: int
    phone: str | None
    external_id: str | None
    display_name: str | None


@dataclass(frozen=True)
class Statements:
    """What a batch executes, built once for the engine's dialect."""
    sqlite_text: bool  # the rows and the health reset sent as SQLite's SQL text, not through Core
    insert: Any  # the dialect's `insert`, with ON CONFLICT DO NOTHING
    store: Any
    reset_health: Any
    stop: Any
    # PostgreSQL: the health reset and a webhook's row in one statement (the reset a CTE of the
    # insert, which PostgreSQL runs whether or not the insert reads it): a lone webhook's batch is
    # one round trip. None on SQLite, where both go as text in one thread hop anyway.
    store_resetting: Any = None


def statements(dialect: str) -> Statements:
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    store = (insert(_INBOUND).on_conflict_do_nothing(index_elements=["message_sid"])
             .returning(_INBOUND.c.id, _INBOUND.c.message_sid))
    reset_health = (
        update(_USERS)
        .where(_USERS.c.id.in_(bindparam("ids", expanding=True)),
               or_(_USERS.c.delivery_failures != 0, _USERS.c.delivery_blocked_at.is_not(None)))
        .values(delivery_failures=0, delivery_blocked_reason=None, delivery_blocked_at=None))
    return Statements(
        sqlite_text=dialect == "sqlite",
        insert=insert,
        store=store,
        reset_health=reset_health,
        store_resetting=_store_resetting() if dialect == "postgresql" else None,
        stop=(
            update(_USERS)
            .where(_USERS.c.id == bindparam("uid"),
                   or_(_USERS.c.opted_out.is_(False), _USERS.c.opted_out.is_(None)))
            .values(opted_out=True, opted_out_at=bindparam("at"))),
    )


_ROW_COLUMNS = ("message_sid", "user_id", "channel", "from_addr", "to_addr", "body", "media", "params",
                "status", "attempts", "lease_until", "error", "created_at", "processed_at", "cost_micro")


def _store_resetting() -> Any:
    """PostgreSQL's one statement for a lone webhook: the row's insert, with the health reset as its
    CTE. The row's values are bound under names of their own (`v_<column>`, `_row_values`): given
    under the columns' names, they would also be taken as values of the CTE's UPDATE (users has a
    `created_at` too), and its constants are written out for the same reason."""
    zero: Any = literal_column("0")
    reset = (update(_USERS)
             .where(_USERS.c.id.in_(bindparam("ids", expanding=True)),
                    or_(_USERS.c.delivery_failures != zero, _USERS.c.delivery_blocked_at.is_not(None)))
             .values(delivery_failures=zero, delivery_blocked_reason=null(), delivery_blocked_at=null())
             .returning(_USERS.c.id).cte("health_reset"))
    values = {name: bindparam(f"v_{name}", type_=_INBOUND.c[name].type) for name in _ROW_COLUMNS}
    return (pg_insert(_INBOUND).values(values).on_conflict_do_nothing(index_elements=["message_sid"])
            .returning(_INBOUND.c.id, _INBOUND.c.message_sid).add_cte(reset))


def _row_values(row: dict[str, Any], reset: list[int]) -> dict[str, Any]:
    return {**{f"v_{name}": value for name, value in row.items()}, "ids": reset}


class UserCache:
    """Senders seen recently, by number and by BSUID, least recently used dropped first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._known: OrderedDict[str, KnownUser] = OrderedDict()

    def clear(self) -> None:
        self._known.clear()

    def remember(self, user: KnownUser) -> None:
        keys = [f"p:{user.phone}" if user.phone else "", f"x:{user.external_id}" if user.external_id else ""]
        for key in filter(None, keys):
            self._known[key] = user
            self._known.move_to_end(key)
        while len(self._known) > self.size:
            self._known.popitem(last=False)

    def lookup(self, p: InboundParams) -> KnownUser | None:
        if p.external_id and f"x:{p.external_id}" in self._known:
            return self._known[f"x:{p.external_id}"]
        if p.phone and f"p:{p.phone}" in self._known:
            found = self._known[f"p:{p.phone}"]
            # A BSUID we have not seen for this number may belong to another account: look it up.
            if not p.external_id or found.external_id in (None, p.external_id):
                return found
        return None


@dataclass(frozen=True)
class Batch:
    """What one batch needs besides its webhooks: the statements, the cache, the new users' defaults,
    the rate table that prices each row (None: left unpriced)."""
    statements: Statements
    cache: UserCache
    defaults: Locale
    rates: RateTable | None = None


def write_batch(conn: Connection, how: Batch,
                items: Items) -> list[tuple[int, int | None]]:
    """(user id, row id or None for a MessageSid stored before) per webhook, in the caller's
    transaction: the senders (looked up or inserted, kept up to date), their delivery health
    reset, the rows, and a typed STOP applied."""
    users = _resolve(conn, how, items)
    user_ids = sorted({u.id for u in users})
    if how.statements.sqlite_text:
        conn.exec_driver_sql(_sqlite_reset_sql(len(user_ids)), tuple(user_ids))
        ids = _store_sqlite(conn, how, items, users)
    elif how.statements.store_resetting is not None and len(items) == 1:
        ids = _store_core(conn, how, items, users, reset=user_ids)
    else:
        conn.execute(how.statements.reset_health, {"ids": user_ids})
        ids = _store_core(conn, how, items, users)
    # A typed STOP opts the user out in the transaction that stores it: their earlier messages
    # still queued are then never answered, and a turn already running sends nothing more.
    for (p, now), user in zip(items, users, strict=True):
        if p.message_sid in ids and is_stop(p.body):
            conn.execute(how.statements.stop, {"uid": user.id, "at": now})
    return results(items, users, ids)


# PostgreSQL's batch when every sender is known and unchanged and no message is a STOP (nearly every
# batch once the cache is warm): the rows and the senders' health reset in one statement sent on its
# own, so PostgreSQL runs it as its own transaction and the batch costs one round trip (no BEGIN, no
# COMMIT). The rows go as one array per column: one prepared statement whatever the batch's size.
# The insert keeps unnest's order, so ids follow arrival; a MessageSid stored before, or twice in the
# batch, is skipped by its unique index (ON CONFLICT DO NOTHING): exactly once, with no look first.
PG_ONE_STATEMENT = """\
WITH health_reset AS (
  UPDATE users SET delivery_failures = 0, delivery_blocked_reason = NULL, delivery_blocked_at = NULL
  WHERE id = ANY($1::bigint[]) AND (delivery_failures != 0 OR delivery_blocked_at IS NOT NULL))
INSERT INTO inbound_messages (message_sid, user_id, channel, from_addr, to_addr, body, media, params,
  status, attempts, lease_until, error, created_at, processed_at, cost_micro)
SELECT sid, uid, channel, from_addr, to_addr, body, media::json, params::json, 'pending', 0, NULL,
  NULL, created_at, NULL, cost
FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
  $9::text[], $10::timestamp[], $11::integer[])
  AS row(sid, uid, channel, from_addr, to_addr, body, media, params, created_at, cost)
ON CONFLICT (message_sid) DO NOTHING
RETURNING id, message_sid"""


def one_statement(how: Batch, items: Items) -> tuple[list[KnownUser], tuple[Any, ...]] | None:
    """The senders and PG_ONE_STATEMENT's arguments for this batch, or None when it needs the full
    transaction (`write_batch`): a sender to look up, insert or bring up to date, or a STOP."""
    users: list[KnownUser] = []
    for p, _ in items:
        user = how.cache.lookup(p)
        if user is None or _changes(user, p) or is_stop(p.body):
            return None
        users.append(user)
    columns: tuple[list[Any], ...] = ([], [], [], [], [], [], [], [], [], [])
    sids, uids, channels, froms, tos, bodies, media, params, times, costs = columns
    for (p, now), u in zip(items, users, strict=True):
        sids.append(p.message_sid)
        uids.append(u.id)
        channels.append(p.channel)
        froms.append(p.from_addr)
        tos.append(p.to_addr)
        bodies.append(p.body)
        media.append(_json(p.media or None))
        params.append(_json(p.params))
        times.append(_naive_utc(now))
        costs.append(inbound_micro(how.rates, p.channel, p.from_addr, p.params))
    return users, (sorted({u.id for u in users}), *columns)


def results(items: Items, users: list[KnownUser], ids: dict[str, int]) -> list[tuple[int, int | None]]:
    """(user id, row id or None) per webhook, from the ids the rows were stored under by MessageSid:
    a MessageSid twice in one batch gets its row at its first occurrence only."""
    return [(user.id, ids.pop(p.message_sid, None)) for (p, _), user in zip(items, users, strict=True)]


def _store_core(conn: Connection, how: Batch, items: Items, users: list[KnownUser],
                reset: list[int] | None = None) -> dict[str, int]:
    """The rows; with `reset` (one row, PostgreSQL), those users' health reset in the same statement."""
    rows = [
        {"message_sid": p.message_sid, "user_id": u.id, "channel": p.channel, "from_addr": p.from_addr,
         "to_addr": p.to_addr, "body": p.body, "media": p.media or None, "params": p.params,
         "status": "pending", "attempts": 0, "lease_until": None, "error": None, "created_at": now,
         "processed_at": None, "cost_micro": inbound_micro(how.rates, p.channel, p.from_addr, p.params)}
        for (p, now), u in zip(items, users, strict=True)
    ]
    if reset is not None:
        inserted = conn.execute(how.statements.store_resetting, _row_values(rows[0], reset)).all()
    else:
        inserted = conn.execute(how.statements.store, rows[0] if len(rows) == 1 else rows).all()
    return {row.message_sid: row.id for row in inserted}


def _store_sqlite(conn: Connection, how: Batch, items: Items, users: list[KnownUser]) -> dict[str, int]:
    values: list[Any] = []
    for (p, now), u in zip(items, users, strict=True):
        values += (p.message_sid, u.id, p.channel, p.from_addr, p.to_addr, p.body,
                   _json(p.media or None), _json(p.params), _sqlite_time(now),
                   inbound_micro(how.rates, p.channel, p.from_addr, p.params))
    inserted = conn.exec_driver_sql(_sqlite_store_sql(len(items)), tuple(values)).all()
    return {sid: row_id for row_id, sid in inserted}


_ROW = "(?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, NULL, NULL, ?, NULL, ?)"


@functools.lru_cache(maxsize=512)
def _sqlite_store_sql(rows: int) -> str:
    return ("INSERT INTO inbound_messages (message_sid, user_id, channel, from_addr, to_addr, body, media, "
            "params, status, attempts, lease_until, error, created_at, processed_at, cost_micro) VALUES "
            + ", ".join([_ROW] * rows) + " ON CONFLICT (message_sid) DO NOTHING RETURNING id, message_sid")


@functools.lru_cache(maxsize=512)
def _sqlite_reset_sql(users: int) -> str:
    return ("UPDATE users SET delivery_failures = 0, delivery_blocked_reason = NULL, "
            f"delivery_blocked_at = NULL WHERE id IN ({', '.join(['?'] * users)}) "
            "AND (delivery_failures != 0 OR delivery_blocked_at IS NOT NULL)")


def _json(value: Any) -> str:
    # None too is JSON's `null`, as Core's JSON type writes it (none_as_null is off).
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # what orjson refuses (an integer past 64 bits): the standard library's way
        return json.dumps(value)


def _naive_utc(value: datetime) -> datetime:
    """A time as the UTC columns store it (bot.storage.models.base.UTCDateTime): naive UTC."""
    if value.tzinfo is None:
        raise ValueError("naive datetime given to a UTC column")
    return value.astimezone(UTC).replace(tzinfo=None)


def _sqlite_time(value: datetime) -> str:
    """A UTC time as SQLAlchemy's SQLite DATETIME stores it."""
    return _naive_utc(value).isoformat(" ", "microseconds")


def _load(conn: Connection, cache: UserCache, phones: set[str], externals: set[str]) -> None:
    conditions = []
    if phones:
        conditions.append(_USERS.c.phone.in_(phones))
    if externals:
        conditions.append(_USERS.c.external_id.in_(externals))
    if not conditions:
        return
    columns = (_USERS.c.id, _USERS.c.phone, _USERS.c.external_id, _USERS.c.display_name)
    for row in conn.execute(select(*columns).where(or_(*conditions))):
        cache.remember(KnownUser(row.id, row.phone, row.external_id, row.display_name))


def _insert_new(conn: Connection, how: Batch, new: Items) -> None:
    seen: set[tuple[str | None, str | None]] = set()
    for p, now in new:
        if (p.phone, p.external_id) in seen:
            continue
        seen.add((p.phone, p.external_id))
        # One at a time: a unique conflict must only skip the row that has it.
        conn.execute(how.statements.insert(_USERS).values(
            phone=p.phone, external_id=p.external_id, display_name=p.profile_name,
            onboarding_step="new", mode="guest", email_verified=False, opted_out=False,
            credit_balance=0, delivery_failures=0, created_at=now,
            **locale_for(p.phone, how.defaults).columns(),
        ).on_conflict_do_nothing())


def _resolve(conn: Connection, how: Batch, items: Items) -> list[KnownUser]:
    cache = how.cache
    missing = [item for item in items if cache.lookup(item[0]) is None]
    if missing:
        _load(conn, cache, {p.phone for p, _ in missing if p.phone},
              {p.external_id for p, _ in missing if p.external_id})
        new = [item for item in missing if cache.lookup(item[0]) is None]
        if new:
            _insert_new(conn, how, new)
            _load(conn, cache, {p.phone for p, _ in new if p.phone},
                  {p.external_id for p, _ in new if p.external_id})
    resolved: list[KnownUser] = []
    for p, _ in items:
        user = cache.lookup(p)
        if user is None:
            raise RuntimeError(f"no user for message {p.message_sid}")
        _update(conn, cache, user, p)
        resolved.append(user)
    return resolved


def _changes(user: KnownUser, p: InboundParams) -> bool:
    """Whether `_update` may have something to write for this webhook's sender."""
    return bool((p.external_id and user.external_id is None) or (p.phone and user.phone is None)
                or (p.profile_name and p.profile_name != user.display_name))


def _update(conn: Connection, cache: UserCache, user: KnownUser, p: InboundParams) -> None:
    """Keeps the BSUID, the number (an alias) and the WhatsApp name up to date."""
    values: dict[str, Any] = {}
    if p.external_id and user.external_id is None:
        values["external_id"] = p.external_id
    if p.phone and user.phone is None:
        taken = conn.scalar(select(_USERS.c.id).where(_USERS.c.phone == p.phone))
        if taken is None:
            values["phone"] = p.phone
    if p.profile_name and p.profile_name != user.display_name:
        values["display_name"] = p.profile_name
    if values:
        conn.execute(update(_USERS).where(_USERS.c.id == user.id).values(**values))
        user.external_id = values.get("external_id", user.external_id)
        user.phone = values.get("phone", user.phone)
        user.display_name = values.get("display_name", user.display_name)
        cache.remember(user)
