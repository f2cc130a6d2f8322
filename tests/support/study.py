"""The review reminders' tests' steps: a student's past messages stored as the webhook stores them
(the hours they study), the days of a habit, and a tap on a reminder's button as Twilio posts it."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from bot.storage.models import InboundMessage, User


def days_at(last: datetime, days: int) -> list[datetime]:
    """`last` and the same time on each of the `days - 1` days before it."""
    return [last - timedelta(days=n) for n in range(days)]


async def wrote_at(h: Any, user_id: int, stamps: Iterable[datetime], channel: str = "whatsapp") -> None:
    """Messages the student sent at these times, answered long ago; the user's row says the latest."""
    stamps = sorted(stamps)
    async with h.services.sessions() as db:
        user = await db.get(User, user_id)
        assert user is not None and user.phone is not None
        for at in stamps:
            db.add(InboundMessage(message_sid=f"SM{secrets.token_hex(16)}", user_id=user_id, channel=channel,
                                  from_addr=h.address(user.phone, channel), body="…", status="done",
                                  attempts=1, created_at=at, processed_at=at))
        user.last_inbound_at = stamps[-1]
        if channel == "whatsapp":
            user.last_whatsapp_inbound_at = stamps[-1]
        await db.commit()


async def run_at(h: Any, job: str, *moments: datetime) -> list[int]:
    """Runs the registered periodic job `job` at each moment; the messages each run sent."""
    sent = []
    for moment in moments:
        h.clock.now = moment
        before = len(h.twilio.sent)
        await h.run_jobs(job)
        sent.append(len(h.twilio.sent) - before)
    return sent


async def tap(h: Any, phone: str, payload: str, title: str) -> list[str]:
    """A tap on a WhatsApp button, as Twilio posts it; the texts it brought."""
    before = len(await h.texts_to(phone))
    extra = {"ButtonPayload": payload, "ButtonText": title, "MessageType": "button"}
    status, _ = await h.inbound(phone, title, extra=extra)
    assert status == 200
    await h.settle()
    return (await h.texts_to(phone))[before:]


def buttons(message: dict[str, Any]) -> list[tuple[str, str]]:
    """(title, id) of a quick-reply message's buttons, as the user sees them."""
    return [(a["title"], a["id"]) for a in message["Rendered"]["twilio/quick-reply"]["actions"]]
