"""The running turn's send state, ambient for every send made inside it.

Four context variables, set together for a block by `sending(...)` and put back when it ends
(the pipeline does so for each turn):

- `current_inbound`: the inbound message whose turn is running, recorded on every send.
- `current_session`: the turn's database session (`Incoming.db`): a message is recorded in it
  when it holds writes, so the answer and its charge commit with the answer's row
  (`record_session`); other writes commit it before they write in a session of their own
  (`commit_turn`).
- `current_keys`: numbers the turn's messages for idempotency: within a turn, the n-th message
  gets the key "in:<inbound id>:<n>" (`SendKeys`); a replayed step finds the row of its key and
  does not send again. Without keys (a job without its own, the console) sends carry no key.
- `current_reply_from`: (user id, our number it arrived on) of the message being answered: that
  user's WhatsApp replies go from the number they wrote to, whose 24 h window is the open one.

A name left out of `sending(...)` keeps its value; None clears it (a task that must not use the
turn's session). The bottom of the package, with `result`: it imports nothing of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import enum
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from bot.storage.db import writes_due, wrote

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
# Set around a turn's last sends (`turn_ending`): their SIDs go into the turn's session.
_ending: contextvars.ContextVar[bool] = contextvars.ContextVar("turn_ending", default=False)


@contextlib.contextmanager
def turn_ending() -> Iterator[None]:
    """The block's sends are the turn's last before the message's end, which commits at once: a
    message recorded in the turn's session (`record_session`) has its SID left for that session's
    next commit (`write_at_commit`: no lock held meanwhile), the message's end, rather than
    written in a transaction of its own. A status callback that comes first waits for it
    (bot.channel.web, UNKNOWN_SID_WAIT_S); a stop in between leaves the row `sending` without
    SID, as a crash right after Twilio's answer does (the outbox looks it up before sending
    again)."""
    token = _ending.set(True)
    try:
        yield
    finally:
        _ending.reset(token)


def sid_with_turn() -> bool:
    """Whether a send in the turn's session writes its SID there (`turn_ending`)."""
    return _ending.get()


async def commit_turn() -> None:
    """Commits the running turn's session before we write in our own: SQLite has one writer."""
    turn_db = current_session.get()
    if turn_db is not None and turn_db.in_transaction():
        await turn_db.commit()


TURN_TASK = "turn_task"  # session.info: the task `sending` gave the session to (the turn's own)


def _running_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no event loop: a block of synchronous code
        return None


@contextlib.asynccontextmanager
async def record_session(sessions: Callable[[], AsyncSession]) -> AsyncIterator[tuple[AsyncSession, bool]]:
    """The session a message's row is recorded in, and whether it is the turn's. The turn's when
    it holds writes (the answer saved, its call's charge) and the send comes from the turn's own
    task: its writes and the row are then one commit rather than two.
    Sends from other tasks (a tool's, a stream's) run beside the turn's and take a session of
    their own, as does a send while the turn's session holds no transaction, after committing the
    turn's (SQLite has one writer)."""
    turn_db = current_session.get()
    if turn_db is not None and turn_db.info.get(TURN_TASK) is asyncio.current_task():
        # An earlier message's SID left for the commit (`turn_ending`) goes first: this one's look
        # must not take that message for one still waiting to leave.
        await writes_due(turn_db)
        if wrote(turn_db):
            yield turn_db, True
            return
    await commit_turn()
    async with sessions() as db:
        yield db, False


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
        if session is not None:
            session.info[TURN_TASK] = _running_task()
    if not isinstance(keys, Keep):
        tokens.append((current_keys, current_keys.set(keys)))
    if not isinstance(reply_from, Keep):
        tokens.append((current_reply_from, current_reply_from.set(reply_from)))
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)
