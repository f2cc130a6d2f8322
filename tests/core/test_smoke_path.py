"""The basic path: a signed webhook in, a worker turn, a reply out through Twilio's API."""

from __future__ import annotations

from tests.support.harness import Harness


async def test_webhook_to_reply(harness: Harness) -> None:
    h = harness
    await h.make_user("+2250700000001", mode="child")
    h.llm.push_text("Bonjour **Awa** !")
    status, body = await h.inbound("+2250700000001", "Salut")
    assert status == 200 and "<Response/>" in body
    await h.settle()
    assert await h.texts_to("+2250700000001") == ["Bonjour *Awa* !"]
