"""One person's account as the operator sees it: enrol, credit, describe, export, forget.

Used by `python -m bot users …` and by the chat's SUPPRIMER/DELETE. Which rows belong to a person
is read from the schema, not listed here: every table with a foreign key to `users.id` (and, in
turn, every table with a foreign key to those rows), plus every row whose phone-like column
(`phone`, `to_addr`, `from_addr`, …) holds the person's number: a table added later is covered too.

Erasure keeps only what accounting needs: the credit ledger and the payments. Their foreign keys
to `users` cascade on delete, so they cannot simply lose their user; they are moved to a fresh
placeholder user that carries nothing personal (no number, no name, opted out, its own new id),
and its remaining balance is written off in the ledger. The person's own id then appears nowhere.
What an erasure does outside the rows (the files' bytes, the shared state, the webhooks left in the
spool, the record that the number was erased) is `outside.py`'s.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    Enum,
    ForeignKey,
    String,
    Table,
    Text,
    cast,
    delete,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from bot.accounts.consent import consent_missing, consent_shown, consent_text, record_consent
from bot.accounts.errors import AccountBusy, AccountError, AccountsError
from bot.accounts.outside import (
    ForgetReport,
    clear_spool,
    clear_state,
    delete_bytes,
    deletion_request_key,
    remember_erasure,
)
from bot.billing import credits
from bot.services import Services
from bot.storage.db import rowcount
from bot.storage.models import Base, OutboundMessage, ParentLink, User

__all__ = ["DELIVERY_HINTS", "ERASED_STEP", "KEPT_FOR_ACCOUNTING", "MAX_DEPTH", "MODES", "PHONE_COLUMNS",
           "REDACTED", "AccountBusy", "AccountError", "AccountsError", "ForgetReport", "consent_missing",
           "consent_shown", "deletion_request_key", "describe", "describe_text", "enrol", "export",
           "find_user", "forget", "forget_number", "identifiers", "record_consent", "role_for", "unaddress"]

log = logging.getLogger("bot.accounts")

MODES = ("guest", "child", "pro")
# Kept, anonymised, at erasure: money and credits must still add up for accounting.
KEPT_FOR_ACCOUNTING = frozenset({"credit_entries", "payments"})
PHONE_COLUMNS = frozenset({"phone", "to_addr", "from_addr", "phone_number", "msisdn", "number"})
ERASED_STEP = "erased"  # onboarding_step of the placeholder that holds kept ledger rows
# Shorter than any E.164 number, so that a replaced value always fits its column.
REDACTED = "[effacé]"
MAX_DEPTH = 6


# --- lookup and enrolment ------------------------------------------------------------------------


async def find_user(db: AsyncSession, phone: str) -> User | None:
    return await db.scalar(select(User).where(User.phone == phone))


def role_for(mode: str, current: str | None) -> str | None:
    """A pro is a pro; a child-mode user is a student unless they are a parent; a guest keeps theirs."""
    if mode == "pro":
        return "pro"
    if mode == "child":
        return current if current in ("student", "parent") else "student"
    return current


async def enrol(db: AsyncSession, phone: str, mode: str, signup_credits: int, now: datetime,
                place: dict[str, str]) -> tuple[User, bool, int | None]:
    """Sets the mode, creating the user ready to use if the number never wrote.

    child and pro skip onboarding and get the signup credits now. A guest keeps the profile menu
    (a new one is welcomed with it at their first message) and gets the credits on choosing a
    profile. Either way they go through the ledger with the profile menu's ref, so whichever
    comes first grants them and the others do nothing. Returns (user, created, new balance if
    the credits were granted now).
    """
    if mode not in MODES:
        raise AccountError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    user = await find_user(db, phone)
    created = user is None
    if user is None:
        user = User(phone=phone, mode=mode, **place, email_verified=False,  # Locale.columns()
                    opted_out=False, credit_balance=0, delivery_failures=0, created_at=now)
        db.add(user)
    user.mode = mode
    user.role = role_for(mode, user.role)
    if created:
        # Not yet greeted: its first message is answered in this mode, then welcomed (without the
        # profile question when the mode is set), and onboarding moves on from there.
        user.onboarding_step = "new"
    elif mode != "guest":
        user.onboarding_step = None
    elif user.onboarding_step is None:
        # A guest can still choose a profile (the guest-limit message and MENU ask for 1, 2 or 3).
        user.onboarding_step = "profile"
    await db.flush()
    granted = None
    if signup_credits > 0 and mode != "guest":
        granted = await credits.apply(db, user.id, signup_credits, "signup", ref=f"signup:{user.id}")
    return user, created, granted


# --- the schema, read ----------------------------------------------------------------------------


def _tables() -> list[Table]:
    return list(Base.metadata.sorted_tables)


def _users() -> Table:
    return Base.metadata.tables["users"]


def _children(table: Table) -> list[tuple[Table, ForeignKey]]:
    """Every foreign key of another table that points at `table`."""
    return [(child, fk) for child in _tables() if child is not table
            for fk in child.foreign_keys if fk.column.table is table]


def _user_columns(table: Table) -> list[Column[Any]]:
    return [fk.parent for fk in table.foreign_keys if fk.column.table is _users()]


def _is_text(column: Column[Any]) -> bool:
    # An Enum is a String to SQLAlchemy, but PostgreSQL has no LIKE or REPLACE for it.
    return isinstance(column.type, String) and not isinstance(column.type, Enum)


def _phone_columns(table: Table) -> list[Column[Any]]:
    return [c for c in table.columns
            if _is_text(c) and (c.name in PHONE_COLUMNS or c.name.endswith("_phone"))]


def identifiers(phone: str | None, external_id: str | None) -> list[str]:
    """The forms a person's address takes in message records."""
    found = [x for x in (phone, external_id) if x]
    return found + [f"whatsapp:{x}" for x in found]


def _phone_match(table: Table, idents: list[str]) -> ColumnElement[bool] | None:
    columns = _phone_columns(table)
    if not columns or not idents:
        return None
    return or_(*(c.in_(idents) for c in columns))


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return value


def _secret(table: Table, column: Column[Any]) -> bool:
    """Pending verification codes and tokens are keys, not data about the person: never shown."""
    name = column.name
    return (table.name == "users" and name.endswith("_code")) or any(
        word in name for word in ("token", "secret", "password"))


def _row_dict(table: Table, row: Any) -> dict[str, Any]:
    return {c.name: _plain(row._mapping[c]) for c in table.columns if not _secret(table, c)}


# --- show ----------------------------------------------------------------------------------------

DELIVERY_HINTS = ("deliver", "block", "bounce")


async def _links(db: AsyncSession, user_id: int, *, parents: bool) -> list[dict[str, Any]]:
    other = ParentLink.parent_id if parents else ParentLink.student_id
    mine = ParentLink.student_id if parents else ParentLink.parent_id
    rows = await db.execute(
        select(User.phone, User.display_name, ParentLink.status, ParentLink.created_at)
        .select_from(ParentLink).join(User, User.id == other).where(mine == user_id).order_by(ParentLink.id)
    )
    return [{"phone": r.phone, "name": r.display_name, "status": r.status, "since": _plain(r.created_at)}
            for r in rows]


async def _counts(db: AsyncSession, user_id: int) -> dict[str, int]:
    """Rows per table that belong to the user (directly, or one step away, like messages)."""
    counts: dict[str, int] = {}
    for table in _tables():
        columns = _user_columns(table)
        if not columns or table.name in counts:
            continue
        mine = or_(*(c == user_id for c in columns))
        counts[table.name] = int(await db.scalar(select(func.count()).select_from(table).where(mine)) or 0)
        for child, fk in _children(table):
            if child.name not in counts and not _user_columns(child):
                inner = fk.parent.in_(select(fk.column).where(mine))
                counts[child.name] = int(await db.scalar(select(func.count()).select_from(child).where(inner))
                                         or 0)
    return {name: n for name, n in sorted(counts.items()) if n}


async def describe(db: AsyncSession, user: User) -> dict[str, Any]:
    """What `users show` prints: the profile, balance, activity, delivery state and links."""
    users = _users()
    row = (await db.execute(select(users).where(users.c.id == user.id))).one()
    profile = _row_dict(users, row)
    last_sent = await db.scalar(select(func.max(OutboundMessage.created_at))
                                .where(OutboundMessage.user_id == user.id))
    return {
        "id": user.id, "phone": user.phone, "name": user.display_name, "mode": user.mode, "role": user.role,
        "language": user.language, "timezone": user.timezone,
        "onboarding": "done" if user.onboarding_step is None else user.onboarding_step,
        "balance": int(profile.get("credit_balance") or 0),
        "created_at": profile.get("created_at"),
        "last_activity": {"last_message_from_them": profile.get("last_inbound_at"),
                          "channel": user.last_channel, "last_message_to_them": _plain(last_sent),
                          "last_whatsapp_message": profile.get("last_whatsapp_inbound_at")},
        "opted_out": bool(user.opted_out), "opted_out_at": profile.get("opted_out_at"),
        "delivery": {k: v for k, v in profile.items() if any(h in k for h in DELIVERY_HINTS)},
        "email": user.email, "email_verified": bool(user.email_verified),
        "parents": await _links(db, user.id, parents=True),
        "children": await _links(db, user.id, parents=False),
        "consent": await consent_shown(db, user.id),  # CONSENT_MODE: who gave it, when, how
        "data": await _counts(db, user.id),
        "profile": profile,
    }


def _links_text(links: list[dict[str, Any]]) -> str:
    if not links:
        return "none"
    return ", ".join(f"{x['phone'] or '?'}{' (' + x['name'] + ')' if x['name'] else ''} {x['status']}"
                     for x in links)


def describe_text(info: dict[str, Any]) -> str:
    activity = info["last_activity"]
    delivery = info["delivery"]
    failures = delivery.get("delivery_failures") or 0
    state = ["ok" if not failures else f"{failures} failed send(s) in a row"]
    state += [f"{k}: {v}" for k, v in delivery.items() if k != "delivery_failures" and v not in (None, "", 0)]
    lines = [
        f"{info['phone']} (user {info['id']})",
        f"  name:        {info['name'] or '-'}",
        f"  profile:     role {info['role'] or '-'}, mode {info['mode']}, language {info['language']}, "
        f"{info['timezone']}",
        f"  onboarding:  {info['onboarding']}",
        f"  balance:     {info['balance']} credit{'s' if info['balance'] != 1 else ''}",
        f"  created:     {info['created_at']}",
        f"  last wrote:  {activity['last_message_from_them'] or 'never'}"
        + (f" on {activity['channel']}" if activity["channel"] else ""),
        f"  last sent:   {activity['last_message_to_them'] or 'never'}",
        "  opt-out:     " + (f"yes, since {info['opted_out_at']}" if info["opted_out"] else "no"),
        f"  delivery:    {'; '.join(state)}",
        f"  e-mail:      {info['email'] or '-'}" + (" (verified)" if info["email"] and info["email_verified"]
                                                    else ""),
        f"  parents:     {_links_text(info['parents'])}",
        f"  children:    {_links_text(info['children'])}",
        f"  consent:     {consent_text(info['consent'])}",
        "  data:        " + (", ".join(f"{n} {name}" for name, n in info["data"].items()) or "none"),
    ]
    return "\n".join(lines)


# --- export --------------------------------------------------------------------------------------


async def _collect(db: AsyncSession, table: Table, condition: ColumnElement[bool],
                   out: dict[str, dict[tuple[Any, ...], dict[str, Any]]], depth: int) -> None:
    rows = (await db.execute(select(table).where(condition))).all()
    keys = list(table.primary_key.columns)
    for row in rows:
        out[table.name][tuple(row._mapping[c] for c in keys)] = _row_dict(table, row)
    if not rows or depth >= MAX_DEPTH:
        return
    for child, fk in _children(table):
        await _collect(db, child, fk.parent.in_(select(fk.column).where(condition)), out, depth + 1)


async def export(db: AsyncSession, user: User, now: datetime) -> dict[str, Any]:
    """Everything kept about the person, as one JSON-ready document (the right of access)."""
    users = _users()
    found: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = defaultdict(dict)
    await _collect(db, users, users.c.id == user.id, found, 0)
    idents = identifiers(user.phone, user.external_id)
    for table in _tables():
        match = _phone_match(table, idents)
        if match is not None and table is not users:
            await _collect(db, table, match, found, 1)
    [profile] = found.pop("users").values()
    data = {name: [rows[k] for k in sorted(rows)] for name, rows in sorted(found.items())}
    return {
        "format": "deblo-account-export/1",
        "exported_at": now.isoformat(),
        "phone": user.phone,
        "profile": profile,
        "account": await describe(db, user),
        "files": [{k: v for k, v in f.items() if k != "text"} for f in data.get("user_files", [])],
        "data": data,
        "note": "File contents are kept in the file store; each file is listed with its metadata and "
                "extracted text (data.user_files). Credit ledger: data.credit_entries.",
    }


# --- forget --------------------------------------------------------------------------------------


async def _purge(db: AsyncSession, table: Table, condition: ColumnElement[bool], deleted: dict[str, int],
                 depth: int) -> None:
    """Deletes the matching rows and, first, every row that points at them.

    A row pointing straight at the user is theirs and goes, whatever its ON DELETE says (an
    outbound message SET NULL would otherwise keep its body and number). Further down, SET NULL
    is honoured: such a row may belong to someone else.
    """
    for child, fk in _children(table):
        inner = fk.parent.in_(select(fk.column).where(condition))
        set_null = (fk.ondelete or "").upper() == "SET NULL" and depth > 0
        if child.name in KEPT_FOR_ACCOUNTING or set_null:
            if fk.parent.nullable:
                await db.execute(update(child).where(inner).values({fk.parent.name: None}))
            continue
        if depth < MAX_DEPTH:
            await _purge(db, child, inner, deleted, depth + 1)
    result = await db.execute(delete(table).where(condition))
    deleted[table.name] += rowcount(result)


async def _detach_kept(db: AsyncSession, user_id: int, report: ForgetReport, now: datetime) -> None:
    """Moves the ledger and payments to a placeholder user with nothing personal on it."""
    kept = [(t, c) for t in _tables() if t.name in KEPT_FOR_ACCOUNTING for c in _user_columns(t)]
    counts: dict[str, int] = {}
    for table, column in kept:
        total = await db.scalar(select(func.count()).select_from(table).where(column == user_id))
        counts[f"{table.name}.{column.name}"] = int(total or 0)
    if not any(counts.values()):
        return
    balance = int(await db.scalar(select(User.credit_balance).where(User.id == user_id)) or 0)
    placeholder = User(phone=None, external_id=None, display_name=None, mode="guest", role=None,
                       onboarding_step=ERASED_STEP, language="fr", opted_out=True, opted_out_at=now,
                       email_verified=False, credit_balance=balance, delivery_failures=0, created_at=now)
    db.add(placeholder)
    await db.flush()
    for table, column in kept:
        await db.execute(update(table).where(column == user_id).values({column.name: placeholder.id}))
    report.kept = {k: v for k, v in counts.items() if v}
    report.placeholder_id = placeholder.id
    if balance > 0:
        # Nobody can use these credits any more: written off, so that the ledger still adds up.
        await credits.apply(db, placeholder.id, -balance, "erased", ref=f"erased:{placeholder.id}")
        report.written_off = balance


async def _forget_address(db: AsyncSession, table: Table, idents: list[str], report: ForgetReport) -> None:
    """Rows addressed to or from the person's number (e.g. a send recorded without a user)."""
    match = _phone_match(table, idents)
    if match is None:
        return
    if table.name in KEPT_FOR_ACCOUNTING or table is _users():
        for column in _phone_columns(table):
            if column.nullable:
                result = await db.execute(update(table).where(column.in_(idents)).values({column.name: None}))
                report.redacted[table.name] += rowcount(result)
        return
    await _purge(db, table, match, report.deleted, 1)


async def _redact(db: AsyncSession, phone: str, report: ForgetReport) -> None:
    """Other people's records that quote the number (a parent's invitation, a student's PARENT +225…)
    lose it. Every text and JSON column is searched: an erasure is rare, and thoroughness wins."""
    postgres = db.get_bind().dialect.name == "postgresql"
    for table in _tables():
        phone_columns = set(_phone_columns(table))
        for column in table.columns:
            if column in phone_columns:
                continue
            if _is_text(column):
                found = column.contains(phone, autoescape=True)
                value: Any = func.replace(column, phone, REDACTED)
            elif isinstance(column.type, JSON):
                text = cast(column, Text)
                found = text.contains(phone, autoescape=True)
                # The number sits inside a JSON string; the mask has no quote or backslash.
                value = func.replace(text, phone, REDACTED)
                value = cast(value, column.type) if postgres else value
            else:
                continue
            result = await db.execute(update(table).where(found).values({column.name: value}))
            report.redacted[table.name] += rowcount(result)


async def unaddress(services: Services, phone: str, external_id: str | None = None) -> int:
    """Masks the number in the address columns of message records, keeping the rows.

    For the one message sent after an erasure (telling the person it is done): its status
    callbacks still find their row, which no longer says to whom it went."""
    idents = identifiers(phone, external_id)
    changed = 0
    async with services.sessions() as db:
        for table in _tables():
            if table is _users() or table.name in KEPT_FOR_ACCOUNTING:
                continue
            for column in _phone_columns(table):
                masked = update(table).where(column.in_(idents)).values({column.name: REDACTED})
                result = await db.execute(masked)
                changed += rowcount(result)
        await db.commit()
    return changed


async def _storage_keys(db: AsyncSession, user_id: int) -> list[str]:
    keys: list[str] = []
    for table in _tables():
        columns = _user_columns(table)
        if "storage_key" in table.c and columns:
            mine = or_(*(c == user_id for c in columns))
            keys += [k for k in (await db.scalars(select(table.c.storage_key).where(mine))) if k]
    return keys


async def forget(services: Services, user_id: int | None, phone: str | None,
                 external_id: str | None = None) -> ForgetReport:
    """Erases the person in one transaction (with the record that their number was erased), then
    their files' bytes, their shared state and their webhooks left in the spool. The caller holds
    their lock."""
    from bot.storage.models import Conversation

    report = ForgetReport(user_id=user_id)
    keys: list[str] = []
    conversations: list[int] = []
    async with services.sessions() as db:
        if user_id is not None:
            keys = await _storage_keys(db, user_id)
            owned = select(Conversation.id).where(Conversation.user_id == user_id)
            conversations = list(await db.scalars(owned))
            await _detach_kept(db, user_id, report, services.clock())
            users = _users()
            await _purge(db, users, users.c.id == user_id, report.deleted, 0)
        idents = identifiers(phone, external_id)
        for table in _tables():
            await _forget_address(db, table, idents, report)
        if phone:
            await _redact(db, phone, report)
        await remember_erasure(db, services, phone, external_id)
        await db.commit()
    await delete_bytes(services, user_id, keys, report)
    await clear_state(services, user_id, conversations)
    await clear_spool(services, phone, external_id, REDACTED, report)
    log.info("account erased", extra={"user_id": user_id, "deleted": dict(report.deleted),
                                      "kept": report.kept, "files": report.files_deleted,
                                      "spooled": report.spooled})
    return report


async def forget_number(services: Services, phone: str, *, wait_s: float = 30.0) -> ForgetReport:
    """`users forget`: waits for the user's lock, so that no worker is answering them meanwhile."""
    from bot.storage.state import lock_key

    async with services.sessions() as db:
        user = await find_user(db, phone)
        user_id, external_id = (user.id, user.external_id) if user is not None else (None, None)
    if user_id is None:
        return await forget(services, None, phone)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while (token := await services.state.acquire(lock_key(user_id), 120.0)) is None:
        if loop.time() > deadline:
            raise AccountBusy(f"{phone} is being answered right now; try again in a minute")
        await asyncio.sleep(0.2)
    try:
        return await forget(services, user_id, phone, external_id)
    finally:
        await services.state.release(lock_key(user_id), token)
