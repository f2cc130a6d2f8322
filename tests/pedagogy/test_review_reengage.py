"""A way back after 24 h: a student with questions due, silent for REENGAGE_AFTER_S (2 days), gets
one approved template (REVIEW_TEMPLATE_SID: their first name and a round's count, a « Réviser »
button) at their study hour; at most REENGAGE_MAX_PER_WEEK a week, none after 3 unanswered until
they write again, never after STOP, REVISION NON nor on a gentle day; an SMS student gets one GSM-7
SMS with SMS_REENGAGE; without a template nothing leaves outside the window, and doctor says so.
Through the real jobs, the send path and FakeTwilio's Messages and Content APIs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bot.channel.formatting import is_gsm7, sms_segments
from bot.config import load_settings
from bot.doctor import Status, local
from bot.learning import send_reengagement, send_review_nudges
from bot.storage.models import OutboundMessage, SafetyFlag, ScheduledSend
from tests.support.learner import add_item
from tests.support.pedagogy import STUDENT, say
from tests.support.study import buttons, days_at, run_at, tap, wrote_at

MONDAY = datetime(2026, 3, 2, tzinfo=UTC)  # Abidjan is UTC
TEMPLATE = "HX" + "5e" * 16
# The template as the operator has it approved (Twilio's Content Template Builder).
APPROVED = {"friendly_name": "deblo_review", "language": "fr", "variables": {"1": "Awa", "2": "5"},
            "types": {"twilio/quick-reply": {
                "body": "Bonjour {{1}} ! {{2}} questions t'attendent pour une révision rapide.",
                "actions": [{"type": "QUICK_REPLY", "title": "Réviser", "id": "revise:1"}]}}}
OTHERS = ("+2250700000011", "+2250700000012", "+2250700000013")


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return MONDAY + timedelta(days=day, hours=hour, minutes=minute)


async def silent_student(h: Any, phone: str = STUDENT, *, name: str | None = "Awa Koné", due: int = 7,
                         channel: str = "whatsapp", **fields: Any) -> int:
    """A student of the early evening (18:xx), who last wrote on Monday at 17:30, with `due` due."""
    h.clock.now = at(-10, 18)
    user = await h.make_user(phone, mode="child", display_name=name, last_channel=channel, **fields)
    await wrote_at(h, user.id, [*days_at(at(-1, 18, 15), 5), at(0, 17, 30)], channel=channel)
    for n in range(due):
        await add_item(h.services, user.id, at(0, 17) - timedelta(hours=n))
    return int(user.id)


async def runs(h: Any, *moments: datetime) -> list[int]:
    return await run_at(h, "review_reengage", *moments)


async def templated(make_harness: Any, **env: str) -> Any:
    h = await make_harness(REVIEW_TEMPLATE_SID=TEMPLATE, **env)
    h.twilio.approve(TEMPLATE, APPROVED)
    return h


async def test_the_template_after_two_days_of_silence_with_its_variables(make_harness: Any) -> None:
    h = await templated(make_harness)
    user_id = await silent_student(h)
    # A day later (window closed, 24 h silent) and the next morning (40 h): nothing. At 18:00 on
    # Wednesday, 48.5 h silent and their hour: the template; once that day.
    assert await runs(h, at(1, 18), at(2, 10), at(2, 18), at(2, 19)) == [0, 0, 1, 0]
    [sent] = h.twilio.to(f"whatsapp:{STUDENT}")
    assert sent["ContentSid"] == TEMPLATE and "Body" not in sent
    assert json.loads(sent["ContentVariables"]) == {"1": "Awa", "2": "5"}  # a round's 5 of the 7 due
    assert h.twilio.shown(sent) == "Bonjour Awa ! 5 questions t'attendent pour une révision rapide."
    assert buttons(sent) == [("Réviser", "revise:1")]
    async with h.services.sessions() as db:
        [row] = list(await db.scalars(select(OutboundMessage).where(OutboundMessage.user_id == user_id)))
    assert (row.kind, row.template, row.channel) == ("review_reengage", True, "whatsapp")
    assert row.body == "Bonjour Awa ! 5 questions t'attendent pour une révision rapide."
    # The ordinary nudge never goes outside the window.
    assert await send_review_nudges(h.services, h.clock()) == 0
    # The tap opens the window and starts the round.
    h.clock.now = at(2, 18, 30)
    texts = await tap(h, STUDENT, "revise:1", "Réviser")
    assert texts[0].startswith("5 questions à revoir. C'est parti !")


async def test_none_after_stop_nor_revision_non_nor_on_a_gentle_day(make_harness: Any) -> None:
    h = await templated(make_harness)
    await silent_student(h)
    await silent_student(h, OTHERS[0])
    await silent_student(h, OTHERS[1], review_nudges=False)  # REVISION NON
    gentle = await silent_student(h, OTHERS[2])
    h.clock.now = at(0, 17, 30)
    await say(h, OTHERS[0], "STOP")  # through the real path, their last message
    async with h.services.sessions() as db:
        db.add(SafetyFlag(user_id=gentle, category="self_harm", source="phrases", created_at=at(0, 17)))
        await db.commit()
    assert await runs(h, at(2, 18)) == [1]
    assert [m["To"] for m in h.twilio.contents_sent()] == [f"whatsapp:{STUDENT}"]
    for phone in OTHERS:
        assert not [m for m in h.twilio.to(phone) if m.get("ContentSid")]


async def test_at_most_two_a_week_and_none_after_three_unanswered(make_harness: Any) -> None:
    h = await templated(make_harness)
    await silent_student(h)
    first_week = await runs(h, *(at(day, 18) for day in range(2, 9)))
    assert first_week == [1, 1, 0, 0, 0, 0, 0]  # Wednesday, Thursday; then the week is full
    # The next Wednesday, the first has left the week: a third. Then none, however long the silence.
    assert await runs(h, *(at(day, 18, 5) for day in range(9, 20))) == [1] + [0] * 10
    # They write again: it starts over, two days of silence later.
    h.clock.now = at(20, 17, 30)
    h.llm.push_text("Re-bonjour !")
    await say(h, STUDENT, "Bonjour")
    assert await runs(h, at(21, 18), at(22, 18)) == [0, 1]
    async with h.services.sessions() as db:
        rows = list(await db.scalars(select(ScheduledSend).where(ScheduledSend.kind == "review_reengage")))
    assert [r.status for r in rows] == ["sent"] * 4


async def test_sms_students_get_one_gsm7_sms_with_sms_reengage(make_harness: Any) -> None:
    h = await make_harness(SMS_REENGAGE="true")  # and no template
    phone = "+2250700000021"
    await silent_student(h, phone, name="Éloïse Bâ", channel="sms", last_whatsapp_inbound_at=None)
    await silent_student(h)  # on WhatsApp: without a template, nothing outside the window
    assert await runs(h, at(2, 18)) == [1]
    [sms] = h.twilio.to(phone)
    assert sms["To"] == phone and not sms.get("ContentSid")
    body = sms["Body"]
    assert is_gsm7(body) and sms_segments(body) == ("GSM-7", 1)
    assert body.startswith("Éloise, 5 questions t'attendent sur Deblo. Réponds REVISION")  # ï is not GSM-7
    # The longest first name still fits one SMS.
    await silent_student(h, "+2250700000022", name="A" * 40, channel="sms", last_whatsapp_inbound_at=None)
    await runs(h, at(2, 18, 5))
    [long] = h.twilio.to("+2250700000022")
    assert sms_segments(long["Body"]) == ("GSM-7", 1)


async def test_without_a_template_nothing_leaves_the_window_and_doctor_says_so(harness: Any,
                                                                             tmp_path: Path) -> None:
    h = harness
    await silent_student(h)
    await silent_student(h, "+2250700000021", channel="sms", last_whatsapp_inbound_at=None)  # no SMS_REENGAGE
    assert await runs(h, at(2, 18), at(3, 18)) == [0, 0]
    assert await send_reengagement(h.services, at(3, 19)) == 0 and h.twilio.sent == []
    check = local.review_reminders(h.settings)
    assert check.status is Status.OFF and "REVIEW_TEMPLATE_SID is not set" in check.reason
    assert "outside the 24 h window" in check.reason and "REVIEW_TEMPLATE_SID" in check.fix
    assert check in local.local_checks(h.settings)
    here = {"DATA_DIR": str(tmp_path)}
    configured = local.review_reminders(load_settings({**here, "REVIEW_TEMPLATE_SID": TEMPLATE}))
    assert configured.status is Status.OK and "at most 2 a week" in configured.reason
    wrong = local.review_reminders(load_settings({**here, "REVIEW_TEMPLATE_SID": "MG123"}))
    assert wrong.status is Status.FAIL
