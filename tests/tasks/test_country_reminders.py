"""A new number's reminders fall at its own country's hour: Douala is UTC+1, Abidjan UTC+0."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.agent.toolspec import ToolContext
from bot.assistant.tasks import send_due_reminders
from tools.create_task import TOOL as CREATE_TASK

CAMEROON = "+237650000001"
START = datetime(2026, 3, 10, 5, 0, tzinfo=UTC)  # 06:00 in Douala


async def test_a_cameroonian_numbers_reminder_arrives_at_its_local_hour(make_harness) -> None:
    h = await make_harness(REMINDER_LEAD_MINUTES="60")
    h.clock.now = START
    await h.inbound(CAMEROON, "Bonjour")  # a new number: created by its first message
    await h.settle()
    user = await h.user(CAMEROON)
    assert user is not None and user.timezone == "Africa/Douala" and user.language == "fr"
    ctx = ToolContext(services=h.services, user_id=user.id, conversation_id=0, channel="whatsapp",
                      mode="child", language="fr")
    result = await CREATE_TASK.run(ctx, {"title": "Exposé de SVT", "due_date": "2026-03-10",
                                         "due_time": "08:00"})
    assert result["success"], result
    before = len(h.twilio.to(f"whatsapp:{CAMEROON}"))
    h.clock.now = datetime(2026, 3, 10, 5, 59, tzinfo=UTC)
    assert await send_due_reminders(h.services, h.clock()) == 0
    # 07:00 in Douala, an hour before 08:00 there (in Abidjan's zone it would be an hour later).
    h.clock.now = datetime(2026, 3, 10, 6, 0, tzinfo=UTC)
    assert await send_due_reminders(h.services, h.clock()) == 1
    await h.twilio.idle()
    [reminder] = [h.twilio.shown(m) for m in h.twilio.to(f"whatsapp:{CAMEROON}")][before:]
    assert "Exposé de SVT" in reminder and "08:00" in reminder
