"""An e-mail change asked by SMS (whose sender can be spoofed) needs WhatsApp or the previous
confirmed address; the previous address is told of every change. Real webhooks, pipeline, Twilio
stand-in and SMTP server."""

from __future__ import annotations

import re
from typing import Any

from tests.support.harness import Harness

PHONE = "+2250700000001"


def code_in(mail: Any) -> str:
    found = re.search(r"\b(\d{6})\b", mail.message.get_body(("plain",)).get_content())
    assert found is not None
    return found.group(1)


def body(mail: Any) -> str:
    return str(mail.message.get_body(("plain",)).get_content())


async def say(h: Harness, text: str, channel: str) -> str:
    before = len(h.twilio.to(PHONE))
    await h.inbound(PHONE, text, channel=channel)
    await h.settle()
    sent = h.twilio.to(PHONE)[before:]
    assert sent, f"no reply to {text!r}"
    return str(sent[-1].get("Body", ""))


async def email_of(h: Harness) -> tuple[str | None, bool, str | None]:
    user = await h.user(PHONE)
    assert user is not None
    return user.email, user.email_verified, user.pending_email


async def test_sms_change_needs_the_previous_address(make_harness: Any, smtp_server: Any) -> None:
    smtp = smtp_server()
    h = await make_harness(**smtp.env())
    await h.make_user(PHONE, mode="pro", email="old@test.ci", email_verified=True)
    await say(h, "EMAIL thief@evil.test", "sms")
    assert smtp.received[-1].rcpt_tos == ["thief@evil.test"]
    reply = await say(h, f"CODE {code_in(smtp.received[-1])}", "sms")
    # The code was right, but by SMS alone nothing changes: old@ is asked to approve.
    assert "WhatsApp" in reply and "old@test.ci" in reply
    assert await email_of(h) == ("old@test.ci", True, "thief@evil.test")
    approval = smtp.received[-1]
    assert approval.rcpt_tos == ["old@test.ci"] and "thief@evil.test" in body(approval)
    count = len(smtp.received)
    await say(h, f"CODE {code_in(smtp.received[-2])}", "sms")  # the same code again: not mailed again
    assert len(smtp.received) == count and (await email_of(h))[0] == "old@test.ci"
    reply = await say(h, f"CODE {code_in(approval)}", "sms")
    assert "confirmé" in reply
    assert await email_of(h) == ("thief@evil.test", True, None)
    notice = smtp.received[-1]
    assert notice.rcpt_tos == ["old@test.ci"] and "remplacée par thief@evil.test" in body(notice)


async def test_sms_change_confirmed_on_whatsapp_and_old_address_told(make_harness: Any,
                                                                     smtp_server: Any) -> None:
    smtp = smtp_server()
    h = await make_harness(**smtp.env())
    await h.make_user(PHONE, mode="pro", email="old@test.ci", email_verified=True)
    await say(h, "EMAIL new@test.ci", "sms")
    code = code_in(smtp.received[-1])
    await say(h, f"CODE {code}", "sms")
    assert (await email_of(h))[0] == "old@test.ci"
    reply = await say(h, f"CODE {code}", "whatsapp")
    assert "confirmé" in reply and await email_of(h) == ("new@test.ci", True, None)
    assert smtp.received[-1].rcpt_tos == ["old@test.ci"] and "SMS" not in body(smtp.received[-1])
    assert "WhatsApp" in body(smtp.received[-1])


async def test_first_address_by_sms_needs_whatsapp(make_harness: Any, smtp_server: Any) -> None:
    smtp = smtp_server()
    h = await make_harness(**smtp.env())
    await h.make_user(PHONE, mode="pro")
    await say(h, "EMAIL moi@test.ci", "sms")
    code = code_in(smtp.received[-1])
    reply = await say(h, f"CODE {code}", "sms")
    assert "WhatsApp" in reply and "aucune adresse" in reply
    assert await email_of(h) == (None, False, "moi@test.ci")
    assert len(smtp.received) == 1  # no previous address to ask or to tell
    await say(h, f"CODE {code}", "whatsapp")
    assert await email_of(h) == ("moi@test.ci", True, None) and len(smtp.received) == 1


async def test_removal_by_sms_tells_the_previous_address(make_harness: Any, smtp_server: Any) -> None:
    smtp = smtp_server()
    h = await make_harness(**smtp.env())
    await h.make_user(PHONE, mode="pro", email="old@test.ci", email_verified=True)
    assert "retirée" in await say(h, "EMAIL SUPPRIMER", "sms")
    assert await email_of(h) == (None, False, None)
    [notice] = smtp.received
    assert notice.rcpt_tos == ["old@test.ci"] and "retirée" in body(notice) and "SMS" in body(notice)


async def test_library_is_not_mailed_after_an_sms_only_change(make_harness: Any, smtp_server: Any) -> None:
    """A spoofed SMS proves a new address it controls, then asks for the files by e-mail: the mail
    can only go to the address confirmed before."""
    smtp = smtp_server()
    h = await make_harness(**smtp.env())
    await h.make_user(PHONE, mode="pro", email="old@test.ci", email_verified=True)
    await say(h, "EMAIL thief@evil.test", "sms")
    await say(h, f"CODE {code_in(smtp.received[-1])}", "sms")
    h.llm.push_tool_calls(("send_email_to_user", {"subject": "Mes fichiers", "body": "<p>Tout</p>"}))
    h.llm.push_text("C'est envoyé.")
    await say(h, "Envoie-moi tous mes fichiers par e-mail", "sms")
    mailed_to = [r for mail in smtp.received for r in mail.rcpt_tos]
    assert mailed_to[-1] == "old@test.ci"
    assert mailed_to.count("thief@evil.test") == 1  # the code only, never a file
