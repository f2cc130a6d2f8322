"""A send that outlives its user: the person was erased (`users forget`, SUPPRIMER) after the sender
loaded them (a reminder rendered, a background job's last message, a file waiting for them). Nothing
is recorded for them and Twilio is not called; the result says nothing was sent."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from bot import accounts
from bot.channel.outbound import send_to_user
from bot.storage.models import OutboundMessage, PendingDelivery, UserFile
from tests.support.harness import Harness, new_sid

PHONE = "+2250700000641"


async def rows(h: Harness, table: type) -> int:
    async with h.services.sessions() as db:
        return int(await db.scalar(select(func.count()).select_from(table)) or 0)


@pytest.mark.parametrize(("kind", "channel", "window_open"), [
    ("reminder", "whatsapp", True),  # a reminder rendered just before the erasure
    ("reply", "whatsapp", True),  # a background job's final message
    ("pending_file", "whatsapp", False),  # a waiting file: it would be kept again for later
    ("pending_file", "sms", True),
    ("optout", "whatsapp", True),  # the one kind that goes to a user who opted out
])
async def test_a_send_to_an_erased_user_records_and_sends_nothing(
        harness: Harness, kind: str, channel: str, window_open: bool) -> None:
    h = harness
    last = h.clock() - (timedelta(0) if window_open else timedelta(days=2))
    user = await h.make_user(PHONE, last_whatsapp_inbound_at=last, last_inbound_at=last)
    key = f"users/{user.id}/test-{new_sid('F')}"
    await h.services.files.put(key, b"%PDF-1.4 devoir")
    async with h.services.sessions() as db:
        media = UserFile(user_id=user.id, name="devoir.pdf", mime="application/pdf", size=15,
                         origin="generated", storage_key=key, created_at=h.clock())
        db.add(media)
        await db.commit()
        await db.refresh(media)
    await accounts.forget(h.services, user.id, PHONE)
    assert await h.user(PHONE) is None

    result = await send_to_user(h.services, user, text="Ton rappel : réviser les fractions.",
                                media=media if kind == "pending_file" else None, channel=channel, kind=kind)

    assert not result.ok and not result.accepted and not result.sids
    assert result.skipped == "erased" and result.reason == "erased"
    assert result.for_model()["delivered"] is False
    assert await rows(h, OutboundMessage) == 0 and await rows(h, PendingDelivery) == 0
    assert h.twilio.requests == 0 and h.twilio.sent == []
