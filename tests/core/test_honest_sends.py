"""Nothing is claimed that was not done: every send a tool reports is checked against what the
local Twilio received. Outside WhatsApp's 24 h window a file goes as a link (SMS, or the
template's link variable) or waits for the user's next message, and is sent when they write."""

from __future__ import annotations

import json
import time
from typing import Any

from sqlalchemy import select

from bot.agent.toolspec import ToolContext
from bot.channel.outbound import explain, send_to_user
from bot.storage.models import OutboundMessage, PendingDelivery, User, UserFile
from tests.support.harness import SMS_FROM, Harness, new_sid
from tools import by_name

PHONE = "+2250700000031"
TEMPLATE = "HX" + "c" * 32


def ctx(h: Harness, user: User, channel: str = "whatsapp") -> ToolContext:
    return ToolContext(services=h.services, user_id=user.id, conversation_id=0, channel=channel,
                       mode=user.mode, language=user.language)


async def make_file(h: Harness, user: User, name: str = "Bilan SYSCOHADA 2026.pdf") -> UserFile:
    key = f"users/{user.id}/test-{new_sid('F')}"
    await h.services.files.put(key, b"%PDF-1.4 bilan")
    async with h.services.sessions() as db:
        row = UserFile(user_id=user.id, name=name, mime="application/pdf", size=14, origin="generated",
                       storage_key=key, created_at=h.clock())
        db.add(row)
        await db.commit()
        return row


async def pending_rows(h: Harness) -> list[PendingDelivery]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(PendingDelivery).order_by(PendingDelivery.id))).all())


def expiry(url: str) -> int:
    """The expiry written in a signed file link (/files/{id}/{expires}/{sig}/{name})."""
    return int(url.split("/files/", 1)[1].split("/")[1])


async def send_tool(h: Harness, user: User, tool: str, **args: Any) -> dict[str, Any]:
    return await by_name()[tool].run(ctx(h, user), {"message": "Voici ton bilan.", **args})


async def test_no_sms_sender_nothing_is_claimed(make_harness: Any) -> None:
    h = await make_harness(TWILIO_SMS_FROM="")
    user = await h.make_user(PHONE, mode="pro", last_channel="sms")
    result = await send_tool(h, user, "send_sms_to_user")
    assert result["success"] is False and result["delivered"] is False
    assert result["reason"] == "not_configured" and "here" in result["what_user_can_do"]
    assert h.twilio.requests == 0 and h.twilio.sent == []
    # The user-facing sentence a handler gives says what did not happen and what to do.
    direct = await send_to_user(h.services, user, text="Code 1234", channel="sms", kind="parent_confirm")
    assert direct.reason == "not_configured" and direct.permanent
    assert explain(direct, "fr").startswith("Rien n'a été envoyé")
    assert explain(direct, "en").startswith("Nothing was sent")


async def test_a_refused_template_is_not_reported_as_sent(make_harness: Any) -> None:
    h = await make_harness(TWILIO_TEMPLATE_SID=TEMPLATE, TWILIO_SMS_FROM="")
    user = await h.make_user(PHONE, mode="pro")
    h.clock.advance(hours=25)
    h.twilio.fail_next("21656")
    result = await send_tool(h, user, "send_whatsapp_to_user")
    assert result["success"] is False and result["delivered"] is False and result["reason"] == "refused"
    assert "21656" in result["detail"] or "invalid" in result["detail"].lower()
    assert h.twilio.requests == 1 and h.twilio.sent == []
    async with h.services.sessions() as db:
        [row] = (await db.scalars(select(OutboundMessage))).all()
    assert row.status == "failed" and row.error_code == "21656"


async def test_a_carrier_stop_is_reported_to_the_model(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="pro", last_channel="sms")
    h.twilio.fail_next("21610")
    result = await send_tool(h, user, "send_sms_to_user")
    assert result["delivered"] is False and result["reason"] == "refused" and h.twilio.sent == []
    # The tool's send is proactive: the next one is not even tried.
    again = await send_tool(h, user, "send_sms_to_user")
    assert again["delivered"] is False and again["reason"] == "delivery_blocked"
    assert "21610" in again["detail"] and h.twilio.requests == 1


async def test_sent_means_twilio_accepted_it(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="pro")
    result = await send_tool(h, user, "send_whatsapp_to_user")
    assert result["success"] is True and result["delivered"] is True and result["channel_used"] == "whatsapp"
    [sent] = h.twilio.sent
    assert sent["Body"] == "Voici ton bilan." and sent["To"] == f"whatsapp:{PHONE}"


async def test_file_outside_the_window_with_a_template_waits_and_goes_on_the_next_message(
    make_harness: Any,
) -> None:
    h = await make_harness(TWILIO_TEMPLATE_SID=TEMPLATE, TWILIO_SMS_FROM="")
    user = await h.make_user(PHONE, mode="child")
    doc = await make_file(h, user)
    h.clock.advance(hours=30)
    result = await send_tool(h, user, "send_whatsapp_to_user", file_id=doc.id)
    # Not delivered: the template cannot carry the file. It says so, and the file waits.
    assert result["delivered"] is False and result["reason"] == "file_waiting"
    assert result["file_waiting_for_next_message"] is True
    assert "writes any message" in result["what_user_can_do"]
    [invite] = h.twilio.sent
    assert invite["ContentSid"] == TEMPLATE and "MediaUrl" not in invite and "Body" not in invite
    variable = json.loads(invite["ContentVariables"])["1"]
    assert "Voici ton bilan." in variable and "une réponse à ce message, et il arrive" in variable
    assert "\n" not in variable  # Meta refuses new lines in a template parameter
    [waiting] = await pending_rows(h)
    assert waiting.file_id == doc.id and waiting.sent_at is None

    # The user answers the template: the file goes out first, then the answer to their message.
    h.llm.push_text("Avec plaisir !")
    status, _ = await h.inbound(PHONE, "Oui, envoie-le")
    assert status == 200
    await h.settle()
    after = h.twilio.sent[1:]
    media = [m for m in after if m.get("MediaUrl")]
    assert len(media) == 1 and media[0]["MediaUrl"].endswith("/bilan-syscohada-2026.pdf")
    bodies = [m.get("Body", "") for m in after]
    assert bodies[0].startswith("📎 Voici le fichier qui attendait.") and bodies[-1] == "Avec plaisir !"
    assert after.index(media[0]) < len(after) - 1
    fetched = [f for f in h.twilio.fetched if f["url"] == media[0]["MediaUrl"]]
    assert fetched and fetched[0]["status"] == 200 and fetched[0]["body"] == b"%PDF-1.4 bilan"
    [waiting] = await pending_rows(h)
    assert waiting.sent_at is not None
    # Sent once: a later message does not send it again.
    h.llm.push_text("Bonne soirée.")
    await h.inbound(PHONE, "Merci")
    await h.settle()
    assert len([m for m in h.twilio.sent if m.get("MediaUrl")]) == 1


async def test_file_outside_the_window_without_any_way_waits_silently(make_harness: Any) -> None:
    h = await make_harness(TWILIO_SMS_FROM="")
    user = await h.make_user(PHONE, mode="child")
    doc = await make_file(h, user)
    h.clock.advance(hours=25)
    result = await send_to_user(h.services, user, text="Ton bilan", media=doc, kind="reminder")
    assert not result.ok and result.reason == "file_waiting" and result.pending_id is not None
    assert result.for_model()["delivered"] is False and h.twilio.requests == 0
    h.llm.push_text("Bonjour !")
    await h.inbound(PHONE, "Bonjour")
    await h.settle()
    media = [m for m in h.twilio.sent if m.get("MediaUrl")]
    assert len(media) == 1 and "Ton bilan" in h.twilio.sent[0]["Body"]


async def test_file_outside_the_window_goes_by_sms_as_a_lasting_link(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="pro")
    doc = await make_file(h, user)
    h.clock.advance(hours=25)
    before = int(time.time())
    result = await send_tool(h, user, "send_whatsapp_to_user", file_id=doc.id)
    assert result["delivered"] is True and result["channel_used"] == "sms"
    assert result["file_sent_as"] == "link"
    [sms] = h.twilio.sent
    assert sms["From"] == SMS_FROM and sms["To"] == PHONE and "MediaUrl" not in sms
    link = next(w for w in sms["Body"].split() if "/files/" in w)
    assert link.endswith("/bilan-syscohada-2026.pdf")
    assert expiry(link) >= before + h.settings.file_link_sms_ttl_s == before + 7 * 86400
    assert (await h.get(link.removeprefix(h.settings.public_base_url)))[0] == 200
    assert await pending_rows(h) == []


async def test_file_outside_the_window_goes_as_the_templates_link_variable(make_harness: Any) -> None:
    h = await make_harness(TWILIO_TEMPLATE_SID=TEMPLATE, TWILIO_TEMPLATE_LINK_VARIABLE="2",
                           TWILIO_SMS_FROM="")
    user = await h.make_user(PHONE, mode="pro")
    doc = await make_file(h, user)
    h.clock.advance(hours=48)
    before = int(time.time())
    result = await send_tool(h, user, "send_whatsapp_to_user", file_id=doc.id)
    assert result["delivered"] is True and result["template"] is True and result["file_sent_as"] == "link"
    [sent] = h.twilio.sent
    variables = json.loads(sent["ContentVariables"])
    assert variables["1"] == "Voici ton bilan." and variables["2"].endswith("/bilan-syscohada-2026.pdf")
    assert expiry(variables["2"]) >= before + 7 * 86400
    assert (await h.get(variables["2"].removeprefix(h.settings.public_base_url)))[0] == 200
    assert await pending_rows(h) == []


async def test_inside_the_window_the_file_is_a_whatsapp_document_with_a_short_link(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="pro")
    doc = await make_file(h, user)
    h.clock.advance(hours=2)
    before = int(time.time())
    result = await send_tool(h, user, "send_whatsapp_to_user", file_id=doc.id)
    assert result["delivered"] is True and "file_sent_as" not in result
    media = [m for m in h.twilio.sent if m.get("MediaUrl")]
    assert len(media) == 1
    # Twilio fetches WhatsApp media at once: that link lives FILE_LINK_TTL_S only.
    assert before + h.settings.file_link_ttl_s <= expiry(media[0]["MediaUrl"]) <= int(time.time()) + 3600
