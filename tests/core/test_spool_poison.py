"""No poison in the spool: a webhook the database would refuse is cleaned at the door, an entry
that still cannot be stored is set aside in `dead.jsonl` (and can be replayed by the operator),
and a torn or short spool write never loses or blocks the webhooks behind it.

Run on both backends: PostgreSQL refuses a NUL byte that SQLite stores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.channel.inbound import clean_form, clean_text
from bot.storage.models import InboundMessage
from tests.support.harness import Harness

PHONE = "+2250700000091"


async def eventually(check: Callable[[], Awaitable[bool]], timeout_s: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not await check():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


async def stored(h: Harness) -> list[tuple[str, str | None]]:
    async with h.services.sessions() as db:
        rows = (await db.scalars(select(InboundMessage).order_by(InboundMessage.id))).all()
        return [(row.body, (row.params or {}).get("ProfileName")) for row in rows]


def spool_lines(h: Harness) -> int:
    spool = Path(h.settings.data_dir) / "spool"
    return sum(len(p.read_bytes().splitlines()) for p in spool.glob("inbound*.jsonl"))


# --- 1. text cleaned at the door -------------------------------------------------------------


@pytest.mark.single_pass
def test_control_characters_go_and_a_lone_surrogate_is_replaced() -> None:
    assert clean_text("a\x00b\x01c\x1fd\x7f\te\r\nf") == "abcd\x7f\te\r\nf"
    assert clean_text("x\ud800y") == "x\ufffdy"
    assert clean_text("é — ok") == "é — ok"
    assert clean_form([("Bo\x00dy", "\x00"), ("To", "+1")]) == [("Body", ""), ("To", "+1")]


async def test_a_nul_byte_in_a_signed_webhook_is_removed_and_the_next_webhook_is_stored(
    harness: Harness,
) -> None:
    h = harness
    await h.make_user(PHONE)
    h.llm.push_text("Réponse 1.")
    h.llm.push_text("Réponse 2.")
    status, body = await h.inbound(PHONE, "Bon\x00jour\x08 à\ttous\r\n", extra={"ProfileName": "A\x00mi"})
    assert status == 200 and "<Response" in body
    await h.settle()
    assert (await h.inbound(PHONE, "Merci"))[0] == 200
    await h.settle()

    async def both_answered() -> bool:
        return len(await h.texts_to(PHONE)) >= 2

    await eventually(both_answered)
    assert await stored(h) == [("Bonjour à\ttous\r\n", "Ami"), ("Merci", None)]
    assert await h.texts_to(PHONE) == ["Réponse 1.", "Réponse 2."]
    assert spool_lines(h) == 0  # stored at once, not queued behind anything
