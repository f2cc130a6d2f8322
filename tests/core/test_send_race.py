"""Two runs of one turn (a worker still finishing a turn whose lease ran out while Redis was down,
and the worker that took the message over) record the same reply under one idempotency key. The
one whose insert comes second is answered from the other's row: the user gets the reply once, and
neither run fails (bot.channel.outbound.attempt `_record`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, func, select
from sqlalchemy.util import await_only

from bot.channel.outbound import SendKeys, send_to_user, sending
from bot.clock import system_now
from bot.storage.models import OutboundMessage
from tests.support.harness import Harness

PHONE = "+2250700000403"


async def test_the_second_insert_of_a_key_is_answered_from_the_first_row(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    key = "turn:race:0"
    raced: list[str] = []

    async def the_other_run() -> None:
        async with h.services.sessions() as db:
            now = system_now()
            db.add(OutboundMessage(user_id=user.id, channel="whatsapp", to_addr=f"whatsapp:{PHONE}",
                                   body="Réponse", kind="reply", status="sent", sid="SMotherrun",
                                   created_at=now, updated_at=now, idempotency_key=key, attempts=1))
            await db.commit()

    def before_insert(_conn: Any, _cursor: Any, statement: str, params: Any, *_rest: Any) -> None:
        # Right between our look for the key (none yet) and our insert: the other run's row lands.
        if statement.startswith("INSERT INTO outbound_messages") and not raced and key in str(params):
            raced.append(key)
            await_only(the_other_run())

    engine = h.services.engine.sync_engine
    event.listen(engine, "before_cursor_execute", before_insert)
    try:
        with sending(keys=SendKeys("turn:race")):
            result = await send_to_user(h.services, user, text="Réponse")
    finally:
        event.remove(engine, "before_cursor_execute", before_insert)
    assert raced == [key]
    assert result.ok and result.sids == ["SMotherrun"]
    assert h.twilio.sent == []  # not sent a second time
    async with h.services.sessions() as db:
        rows = await db.scalar(select(func.count(OutboundMessage.id))
                               .where(OutboundMessage.idempotency_key == key))
    assert rows == 1
