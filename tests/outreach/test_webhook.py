"""The outreach tools through the whole bot: a signed webhook in, the model (FakeLLM) calling the
tool, the real pipeline, Twilio (FakeTwilio), SMTP (aiosmtpd) and local web services."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from bot.agent.toolspec import ToolContext
from bot.storage.models import Message
from tools.send_sms_to_user import TOOL as SMS
from tools.send_whatsapp_to_user import TOOL as WHATSAPP

PHONE = "+2250700000001"
BUG_PHONE = "+2250799999999"


async def tool_results(h: Any, name: str) -> list[dict[str, Any]]:
    async with h.services.sessions() as db:
        rows = (await db.scalars(select(Message).where(Message.role == "tool").order_by(Message.id))).all()
    calls: dict[str, str] = {}
    async with h.services.sessions() as db:
        for m in (await db.scalars(select(Message).where(Message.role == "assistant"))).all():
            for call in m.tool_calls or []:
                calls[call["id"]] = call["function"]["name"]
    return [json.loads(r.content) for r in rows if (r.name or calls.get(r.tool_call_id or "")) == name]


def offered(h: Any, request_index: int = 0) -> set[str]:
    return {t["function"]["name"] for t in h.llm.requests[request_index].get("tools", [])}


async def test_sms_tool_sends_to_the_user_only(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE, mode="child")
    h.llm.push_tool_calls(("send_sms_to_user", {"message": "Rappel : exercice 3 page 42 pour demain"}))
    h.llm.push_text("Je t'ai envoyé le rappel par SMS.")
    await h.inbound(PHONE, "Envoie-moi un SMS de rappel pour mon exercice")
    await h.settle()
    assert "send_sms_to_user" in offered(h)
    sms = [m for m in h.twilio.sent if m["To"] == PHONE]
    assert len(sms) == 1 and "exercice 3 page 42" in sms[0]["Body"]
    assert sms[0]["From"] == h.settings.twilio_sms_from
    [result] = await tool_results(h, "send_sms_to_user")
    assert result["success"] is True and result["channel_used"] == "sms"
    assert (await h.texts_to(PHONE))[-1] == "Je t'ai envoyé le rappel par SMS."


async def test_whatsapp_tool_outside_the_window_falls_back_to_sms_and_says_so(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE, mode="pro", last_channel="sms",
                      last_whatsapp_inbound_at=h.clock() - timedelta(days=3))
    h.llm.push_tool_calls(("send_whatsapp_to_user", {"message": "Récapitulatif de la séance"}))
    h.llm.push_text("Envoyé.")
    await h.inbound(PHONE, "Envoie le récap sur WhatsApp", channel="sms")
    await h.settle()
    recap = [m for m in h.twilio.sent if "Récapitulatif" in m.get("Body", "")]
    assert len(recap) == 1 and recap[0]["To"] == PHONE  # an SMS, not whatsapp:+225…
    [result] = await tool_results(h, "send_whatsapp_to_user")
    assert result["success"] is True and result["channel_used"] == "sms"
    assert "instead of whatsapp" in result["note"]
    assert '"channel_used": "sms"' in h.llm.all_request_text().replace('\\"', '"')


async def test_whatsapp_tool_outside_the_window_uses_the_template(make_harness: Any) -> None:
    h = await make_harness(TWILIO_TEMPLATE_SID="HX" + "1" * 32)
    await h.make_user(PHONE, mode="pro", last_channel="sms",
                      last_whatsapp_inbound_at=h.clock() - timedelta(days=3))
    h.llm.push_tool_calls(("send_whatsapp_to_user", {"message": "Ton rapport est prêt"}))
    h.llm.push_text("C'est parti.")
    await h.inbound(PHONE, "Préviens-moi sur WhatsApp", channel="sms")
    await h.settle()
    templated = [m for m in h.twilio.sent if m.get("ContentSid")]
    assert len(templated) == 1 and templated[0]["To"] == f"whatsapp:{PHONE}"
    [result] = await tool_results(h, "send_whatsapp_to_user")
    assert result["channel_used"] == "whatsapp" and result.get("template") is True


async def test_whatsapp_tool_inside_the_window_sends_a_file(harness: Any) -> None:
    from bot import library

    h = harness
    user = await h.make_user(PHONE, mode="pro")
    async with h.services.sessions() as db:
        f = await library.add_file(h.services, db, user_id=user.id, name="fiche.pdf", mime="application/pdf",
                                   data=b"%PDF-1.4 fiche", origin="generated", text_content="fiche")
        await db.commit()
    h.llm.push_tool_calls(("send_whatsapp_to_user", {"message": "Voici ta fiche", "file_id": f.id}))
    h.llm.push_text("Envoyée.")
    await h.inbound(PHONE, "Renvoie-moi la fiche")
    await h.settle()
    [result] = await tool_results(h, "send_whatsapp_to_user")
    assert result["success"] is True and result["channel_used"] == "whatsapp"
    to_user = h.twilio.to(PHONE)
    assert any("Voici ta fiche" in m.get("Body", "") for m in to_user)
    assert any(m.get("MediaUrl") for m in to_user)


async def test_opted_out_user_gets_nothing(harness: Any) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="pro", opted_out=True)
    ctx = ToolContext(services=h.services, user_id=user.id, conversation_id=1, channel="whatsapp",
                      mode="pro", language="fr")
    for tool in (SMS, WHATSAPP):
        result = await tool.run(ctx, {"message": "coucou"})
        assert result["success"] is False and result.get("opted_out") is True
    assert h.twilio.sent == []


async def test_twilio_down_gives_an_error_result(harness: Any) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="pro")
    ctx = ToolContext(services=h.services, user_id=user.id, conversation_id=1, channel="whatsapp",
                      mode="pro", language="fr")
    await h.twilio.stop()
    result = await SMS.run(ctx, {"message": "coucou"})
    assert result["success"] is False and "could not be sent" in result["error"]
    too_long = await SMS.run(ctx, {"message": "x" * 5000})
    assert too_long["success"] is False and "too long" in too_long["error"]


async def test_report_bug_mails_and_whatsapps_the_team_and_thanks_the_user(make_harness: Any,
                                                                           smtp_server: Any) -> None:
    smtp = smtp_server()
    h = await make_harness(**smtp.env(BUG_REPORT_EMAIL="bugs@deblo.test", BUG_REPORT_WHATSAPP=BUG_PHONE))
    await h.make_user(PHONE, mode="child")
    description = "Le PDF de la leçon ne s'ouvre pas sur mon téléphone"
    h.llm.push_tool_calls(("report_bug", {"description": description}))
    h.llm.push_text("Je l'ai signalé.")
    await h.inbound(PHONE, "Le PDF ne marche pas, signale-le")
    await h.settle()
    [result] = await tool_results(h, "report_bug")
    assert result["success"] is True and "email" in result["delivered_by"]
    conversation_id = result["conversation_id"]
    [mail] = smtp.received
    assert mail.rcpt_tos == ["bugs@deblo.test"]
    assert f"conversation {conversation_id}" in mail.message["Subject"]
    assert "ne s'ouvre pas" in mail.message.get_body(("plain",)).get_content()
    to_team = h.twilio.to(BUG_PHONE)
    assert len(to_team) == 1 and "ne s'ouvre pas" in to_team[0]["Body"]
    assert f"conversation {conversation_id}" in to_team[0]["Body"]
    texts = await h.texts_to(PHONE)
    assert any("Merci d'avoir signalé" in t for t in texts)


async def test_email_register_confirm_then_send_through_the_model(make_harness: Any,
                                                                   smtp_server: Any) -> None:
    smtp = smtp_server()
    h = await make_harness(**smtp.env())
    await h.make_user(PHONE, mode="pro")
    await h.inbound(PHONE, "EMAIL awa@exemple.ci")
    await h.settle()
    assert smtp.received[0].rcpt_tos == ["awa@exemple.ci"]
    found = re.search(r"\b(\d{6})\b", smtp.received[0].message.get_body(("plain",)).get_content())
    assert found is not None
    code = found.group(1)
    assert code not in " ".join(await h.texts_to(PHONE))  # the code only goes to the mailbox
    await h.inbound(PHONE, f"CODE {code}")
    await h.settle()
    assert "confirmé" in (await h.texts_to(PHONE))[-1]
    assert h.llm.requests == []  # commands never reach the model
    h.llm.push_tool_calls(("send_email_to_user", {"subject": "Ton résumé", "body": "<p>Les fractions…</p>"}))
    h.llm.push_text("C'est dans ta boîte mail.")
    await h.inbound(PHONE, "Envoie-moi le résumé par e-mail")
    await h.settle()
    assert "send_email_to_user" in offered(h) and "draft_email" in offered(h)
    assert len(smtp.received) == 2
    assert smtp.received[1].rcpt_tos == ["awa@exemple.ci"]
    assert smtp.received[1].message["Subject"] == "Ton résumé"


async def test_model_cannot_mail_a_stranger(make_harness: Any, smtp_server: Any) -> None:
    smtp = smtp_server()
    h = await make_harness(**smtp.env())
    await h.make_user(PHONE, mode="child", email="awa@exemple.ci", email_verified=True)
    h.llm.push_tool_calls(("send_email_to_user", {"subject": "s", "body": "b", "to": "prof@ecole.ci"}))
    h.llm.push_text("Je ne peux écrire qu'à ton adresse.")
    await h.inbound(PHONE, "Envoie ça à mon prof prof@ecole.ci")
    await h.settle()
    assert "draft_email" not in offered(h)  # child mode
    assert smtp.received == []
    results = await tool_results(h, "send_email_to_user")
    assert results and results[0]["success"] is False


async def test_browse_url_refusal_reaches_the_model(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE, mode="pro")
    h.llm.push_tool_calls(("browse_url", {"url": "http://169.254.169.254/latest/meta-data/"}))
    h.llm.push_text("Je ne peux pas lire cette adresse.")
    await h.inbound(PHONE, "Lis http://169.254.169.254/latest/meta-data/")
    await h.settle()
    [result] = await tool_results(h, "browse_url")
    assert result["success"] is False and result["refused"] is True
    assert "private" in h.llm.all_request_text()


async def test_draft_email_shown_with_a_working_link_and_never_sent(make_harness: Any,
                                                                    smtp_server: Any) -> None:
    from email import message_from_bytes, policy

    smtp = smtp_server()
    h = await make_harness(**smtp.env())
    await h.make_user(PHONE, mode="pro")
    h.llm.push_tool_calls(("draft_email", {"to": "dg@client.ci", "subject": "Proposition",
                                           "body": "<p>Madame, voici notre proposition.</p>"}))
    h.llm.push_text("Voici ton brouillon, relis-le avant de l'envoyer.")
    await h.inbound(PHONE, "Rédige un mail à dg@client.ci pour la proposition")
    await h.settle()
    assert smtp.received == []
    [result] = await tool_results(h, "draft_email")
    assert result["success"] is True and result["sent"] is False
    shown = next(t for t in await h.texts_to(PHONE) if "dg@client.ci" in t)
    found = re.search(r"(https?://\S+\.eml)", shown)
    assert found is not None, shown
    link = found.group(1)
    status, headers, body = await h.get(link.removeprefix(h.settings.public_base_url))
    assert status == 200 and headers["Content-Type"].startswith("message/rfc822")
    eml = message_from_bytes(body, policy=policy.default)
    assert eml["To"] == "dg@client.ci" and eml["Subject"] == "Proposition" and eml["X-Unsent"] == "1"
