"""The running turn's send state, ambient for every send made inside it.

Four context variables, set together for a block by `sending(...)` and put back when it ends
(the pipeline does so for each turn):

- `current_inbound`: the inbound message whose turn is running, recorded on every send.
- `current_session`: the turn's database session (`Incoming.db`), committed before anything is
  sent (`commit_turn`).
- `current_keys`: numbers the turn's messages for idempotency: within a turn, the n-th message
  gets the key "in:<inbound id>:<n>" (`SendKeys`); a replayed step finds the row of its key and
  does not send again. Without keys (a job without its own, the console) sends carry no key.
- `current_reply_from`: (user id, our number it arrived on) of the message being answered: that
  user's WhatsApp replies go from the number they wrote to, whose 24 h window is the open one.

A name left out of `sending(...)` keeps its value; None clears it (a task that must not use the
turn's session). The bottom of the package, with `result`: it imports nothing of it.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

# The inbound message whose turn is running (set by the pipeline), recorded on every send.
current_inbound: contextvars.ContextVar[int | None] = contextvars.ContextVar("current_inbound", default=None)
# The database session of the running turn (Incoming.db). It is committed before anything is sent:
# what led to a message is durable before the message leaves, and SQLite's single writer is not
# held while we wait on Twilio (our own record of the send needs it).
current_session: contextvars.ContextVar[Any] = contextvars.ContextVar("current_session", default=None)


@dataclass
class SendKeys:
    """Numbers the messages of one turn: the n-th gets the idempotency key "<prefix>:<n>"."""

    prefix: str
    count: int = 0

    def next(self) -> str:
        key = f"{self.prefix}:{self.count}"
        self.count += 1
        return key[:120]


# Set by the pipeline for each turn; without it (a job, the console) sends carry no key.
current_keys: contextvars.ContextVar[SendKeys | None] = contextvars.ContextVar("current_keys", default=None)
# (user id, the inbound's To) of the message being answered: WhatsApp's window is per pair of numbers.
current_reply_from: contextvars.ContextVar[tuple[int, str] | None] = contextvars.ContextVar(
    "current_reply_from", default=None)


async def commit_turn() -> None:
    """Commits the running turn's session before we write in our own: SQLite has one writer."""
    turn_db = current_session.get()
    if turn_db is not None and turn_db.in_transaction():
        await turn_db.commit()


class Keep(enum.Enum):
    """`sending(...)`'s default: the variable keeps the value it has (None would clear it)."""

    KEEP = enum.auto()


@contextlib.contextmanager
def sending(
    *,
    inbound: int | Keep | None = Keep.KEEP,
    session: AsyncSession | Keep | None = Keep.KEEP,
    keys: SendKeys | Keep | None = Keep.KEEP,
    reply_from: tuple[int, str] | Keep | None = Keep.KEEP,
) -> Iterator[None]:
    """Sets the send state given for the block, and puts back what was there when it ends, raised
    or not. A task created inside the block starts with this state (it copies the context)."""
    tokens: list[tuple[contextvars.ContextVar[Any], contextvars.Token[Any]]] = []
    if not isinstance(inbound, Keep):
        tokens.append((current_inbound, current_inbound.set(inbound)))
    if not isinstance(session, Keep):
        tokens.append((current_session, current_session.set(session)))
    if not isinstance(keys, Keep):
        tokens.append((current_keys, current_keys.set(keys)))
    if not isinstance(reply_from, Keep):
        tokens.append((current_reply_from, current_reply_from.set(reply_from)))
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)
