"""The one pending numbered menu of a conversation (a quiz, the credit packs…).

A menu is numbered text and the user answers with a number; on WhatsApp it may also come as buttons
or a list (bot.channel.buttons) whose ids carry the menu's `menu_id`, so that a tap on an older menu
is told apart from an answer to this one (handlers/buttons.py). Only one menu is pending per
conversation: a new one replaces the previous, so "2" always means the last menu the user saw.

A menu lives in the shared state (read at every message) and in the database (`pending_menus`):
when the state loses it (Redis restarted, or the process holding the in-process state), the row
brings it back, so a quiz's « 2 » is still checked as the answer, never sent to the model as chat.
Expiry is wall-clock time, as the state's TTLs are.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import ColumnElement, SQLColumnExpression, delete, exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.services import Services
from bot.storage.models import PendingMenu

# A late answer to a menu that expired gets a hint for this many times the menu's own lifetime.
HINT_FACTOR = 24


def _key(conversation_id: int) -> str:
    return f"menu:{conversation_id}"


def _expired_key(conversation_id: int) -> str:
    return f"menu-expired:{conversation_id}"


def _now() -> datetime:
    return datetime.now(UTC)


@contextlib.asynccontextmanager
async def _session(services: Services, db: AsyncSession | None) -> AsyncIterator[AsyncSession]:
    """The caller's session when it has a write open (SQLite has one writer: a second session
    would wait on it), committed by the caller; else a session of our own, committed here."""
    if db is not None:
        yield db
        await db.flush()
        return
    async with services.sessions() as own:
        yield own
        await own.commit()


async def set_menu(services: Services, conversation_id: int, kind: str, data: dict[str, Any],
                   ttl_s: float, *, db: AsyncSession | None = None, menu_id: str | None = None) -> str:
    """Makes this the conversation's pending menu; returns its id (new each time, unless given)."""
    menu_id = menu_id or secrets.token_hex(6)
    payload = {"kind": kind, **data, "menu_id": menu_id}
    now = _now()
    async with _session(services, db) as session:
        await session.execute(delete(PendingMenu).where(PendingMenu.conversation_id == conversation_id))
        session.add(PendingMenu(conversation_id=conversation_id, kind=kind, payload=payload,
                                expires_at=now + timedelta(seconds=ttl_s),
                                hint_until=now + timedelta(seconds=ttl_s * HINT_FACTOR)))
    _changed()
    await services.state.kv_set(_key(conversation_id), json.dumps(payload, ensure_ascii=False), ttl_s)
    # Remembered longer than the menu itself, so that a late answer gets a hint, not silence.
    await services.state.kv_set(_expired_key(conversation_id), kind, ttl_s * HINT_FACTOR)
    return menu_id


@dataclass(frozen=True)
class _Row:
    kind: str
    payload: dict[str, Any]
    expires_at: datetime
    hint_until: datetime


# Bumped by every change of a menu in this process: a message's session keeps the row it read (or
# that there was none) for its later looks only while nothing changed a menu meanwhile.
_changes = [0]


def _changed() -> None:
    _changes[0] += 1


async def _row(services: Services, conversation_id: int, db: AsyncSession | None) -> _Row | None:
    """The menu's row, read in the caller's session when it has one (a message's: no transaction of
    its own for a read, and read once for all the handlers that look), else in a session of our own."""
    query = select(PendingMenu).where(PendingMenu.conversation_id == conversation_id)
    if db is None:
        async with services.sessions() as own:
            return _copy(await own.scalar(query))
    memo = db.info.get(("pending_menu", conversation_id))
    if memo is not None and memo[0] == _changes[0]:
        return cast(_Row | None, memo[1])
    row = _copy(await db.scalar(query))
    db.info[("pending_menu", conversation_id)] = (_changes[0], row)
    return row


def kept(conversation_id: SQLColumnExpression[int]) -> ColumnElement[bool]:
    """Whether the conversation has a menu row, as an EXISTS for a caller's SELECT (a message's
    arrival, bot.pipeline.messages): most have none, and `none_kept` then spares the read."""
    return exists().where(PendingMenu.conversation_id == conversation_id)


def none_kept(db: AsyncSession, conversation_id: int) -> None:
    """Notes in the message's session that the caller found no menu row (`kept`): its looks take
    that answer, as they take a row read earlier, while nothing changes a menu."""
    db.info[("pending_menu", conversation_id)] = (_changes[0], None)


def _copy(row: PendingMenu | None) -> _Row | None:
    return None if row is None else _Row(row.kind, dict(row.payload), row.expires_at, row.hint_until)


async def get_menu(services: Services, conversation_id: int, *,
                   db: AsyncSession | None = None) -> dict[str, Any] | None:
    raw = await services.state.kv_get(_key(conversation_id))
    if raw is not None:
        menu: dict[str, Any] = json.loads(raw)
        return menu
    row = await _row(services, conversation_id, db)
    if row is None or row.expires_at <= _now():
        return None
    # The state lost it: put it back for the time it has left.
    left = (row.expires_at - _now()).total_seconds()
    await services.state.kv_set(_key(conversation_id), json.dumps(row.payload, ensure_ascii=False), left)
    return dict(row.payload)


async def clear_menu(services: Services, conversation_id: int, *, db: AsyncSession | None = None) -> None:
    async with _session(services, db) as session:
        await session.execute(delete(PendingMenu).where(PendingMenu.conversation_id == conversation_id))
    _changed()
    await services.state.kv_delete(_key(conversation_id))
    await services.state.kv_delete(_expired_key(conversation_id))


async def expired_menu_kind(services: Services, conversation_id: int, *,
                            db: AsyncSession | None = None) -> str | None:
    """The kind of a menu that was shown and has since expired (still unanswered), if any."""
    if await get_menu(services, conversation_id, db=db) is not None:
        return None
    kind = await services.state.kv_get(_expired_key(conversation_id))
    if kind is not None:
        return kind
    row = await _row(services, conversation_id, db)
    return row.kind if row is not None and row.hint_until > _now() else None
