"""A worker warms up before it takes work (bot.warm): the first message after a start then compiles
almost none of its statements, imports nothing of the Twilio library, and the rehearsal that
compiled them leaves no row behind. Counts of compiled statements, not times."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import event, func, select
from sqlalchemy.engine import default

from bot.storage.models import Conversation, CreditEntry, InboundMessage, Message, OutboundMessage, User
from bot.warm import warm_up
from tests.support.harness import Harness

PHONE = "+2250700000042"
TABLES = (User, InboundMessage, Conversation, Message, OutboundMessage, CreditEntry)
# The claim, the arrival, the message and the reply kept, the debit, the message's end.
REHEARSED = ("SELECT inbound_messages.id, inbound_messages.status", "UPDATE inbound_messages SET status=",
             "SELECT users.id, users.phone, users.external_id, users.display_name, users.mode",
             "INSERT INTO messages", "INSERT INTO outbound_messages", "INSERT INTO credit_entries",
             "UPDATE users SET credit_balance")


def compiled(phases: list[list[str]]) -> Callable[..., None]:
    """A listener that adds to the last of `phases` each statement SQLAlchemy compiles (one not in
    its cache yet), as SQL."""

    def look(_conn: Any, _cursor: Any, statement: str, _params: Any, context: Any, _many: bool) -> None:
        if getattr(context, "cache_hit", None) is default.CACHE_MISS:
            phases[-1].append(" ".join(statement.split()))

    return look


async def rows(h: Harness) -> list[int]:
    async with h.services.sessions() as db:
        return [int(await db.scalar(select(func.count()).select_from(table)) or 0) for table in TABLES]


async def test_after_the_warm_up_a_first_answer_compiles_only_the_handlers_own_statements(
        harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    before = await rows(h)
    warmed: list[str] = []
    phases = [warmed]
    event.listen(h.services.engine.sync_engine, "before_cursor_execute", compiled(phases))
    await warm_up(h.services)
    assert await rows(h) == before  # the made-up pupil's turn is rolled back whole
    assert len(warmed) >= 20
    assert h.services.twilio._client is not None  # built, its REST modules imported
    h.llm.push_text("Une fraction, c'est une part d'un tout.")
    first: list[str] = []
    phases.append(first)
    status, _ = await h.inbound(PHONE, "Explique-moi les fractions, s'il te plaît")
    await h.settle()
    assert status == 200
    assert [h.twilio.shown(m) for m in h.twilio.to(PHONE)] == ["Une fraction, c'est une part d'un tout."]
    # Left to it: the webhook's own three (the serve's side: the sender, the backlog, the status
    # callback), two of the handlers' (their files waiting, the memories), the SID kept, the turn's
    # row, and what a periodic pass of the worker happens to run meanwhile. Without the warm-up, 35.
    assert len(first) < 12, first
    for rehearsed in REHEARSED:
        assert not [sql for sql in first if sql.startswith(rehearsed)], rehearsed
