"""Side effects of tool calls, done once per inbound message however often its turn runs.

A turn cut short by a crash is run again (bot.pipeline.workers), and the model may well ask for the same
task, memory, e-mail or credit again. So every call of a tool with side effects carries a key: the
inbound message, the call's position in the turn, and the tool. The key is claimed (a row with a
unique key) before the tool runs and the result is stored with it once it is done. A repeat finds
the row: a finished effect gives back its stored result; an effect whose run was cut short is not
attempted again (it may have happened) and the model is told so. A tool whose effect is only in
the database stores the key with it instead (`mark_done` in the effect's own transaction): then a
run cut short left no effect behind, and the call simply runs again.

Positions count every tool call of the message's turn, earlier runs included (the calls they saved
in the history): a re-run whose model sees the earlier work and asks for something new gets a new
key, while a re-run that repeats calls the first run made but never saved gets the same keys.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from bot.storage.models import ToolEffect, utcnow

log = logging.getLogger(__name__)

STARTED = "started"
DONE = "done"


@dataclass(frozen=True)
class Earlier:
    """What a key already holds: a finished result, or a run that was cut short."""

    tool: str
    status: str
    result: dict[str, Any] | None


@dataclass
class EffectStore:
    sessions: Callable[[], Any]  # async_sessionmaker[AsyncSession]
    user_id: int | None
    inbound_id: int
    first_position: int = 0  # tool calls this message's turn made in earlier runs
    clock: Callable[[], Any] = utcnow

    def key(self, position: int, tool: str) -> str:
        return f"inbound:{self.inbound_id}:call:{self.first_position + position}:{tool}"

    async def claim(self, key: str, tool: str) -> Earlier | None:
        """None when the key is new (and now ours); otherwise what it already holds."""
        async with self.sessions() as db:
            try:
                db.add(ToolEffect(key=key, user_id=self.user_id, tool=tool, status=STARTED,
                                  created_at=self.clock()))
                await db.commit()
                return None
            except IntegrityError:
                await db.rollback()
            row = await db.scalar(select(ToolEffect).where(ToolEffect.key == key))
        if row is None:  # removed in between (the user's data was erased): nothing to repeat
            return Earlier(tool, STARTED, None)
        return Earlier(row.tool, row.status, row.result)

    async def finish(self, key: str, result: dict[str, Any]) -> None:
        stored = json.loads(json.dumps(result, ensure_ascii=False, default=str))
        try:
            async with self.sessions() as db:
                await db.execute(
                    update(ToolEffect).where(ToolEffect.key == key)
                    .values(status=DONE, result=stored, finished_at=self.clock())
                )
                await db.commit()
        except Exception:
            # The effect happened; left "started", a repeat is refused rather than done twice.
            log.exception("could not store the result of a tool call", extra={"effect_key": key})


async def mark_done(db: AsyncSession, key: str, result: dict[str, Any], now: Any) -> None:
    """Marks a key done in the caller's transaction, the one that makes the effect itself."""
    if not key:
        return
    stored = json.loads(json.dumps(result, ensure_ascii=False, default=str))
    await db.execute(
        update(ToolEffect).where(ToolEffect.key == key).values(status=DONE, result=stored, finished_at=now)
    )


async def for_turn(
    db: AsyncSession, sessions: Callable[[], Any], *, user_id: int | None, conversation_id: int,
    inbound_id: int | None, clock: Callable[[], Any] = utcnow, rerun: bool = True,
) -> EffectStore | None:
    """The store of one inbound message's turn (None without an inbound message: nothing re-runs).
    Without `rerun` (the message's first run) no earlier run saved calls: nothing is read."""
    if inbound_id is None:
        return None
    from bot.agent.history import tool_calls_saved

    first = await tool_calls_saved(db, conversation_id, inbound_id) if rerun else 0
    return EffectStore(sessions, user_id, inbound_id, first, clock)
