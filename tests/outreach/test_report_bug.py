"""report_bug without the webhook: e-mail only, the daily cap, SMTP down, and when it is offered."""

from __future__ import annotations

from tests.support.outreach import Delivered, add_user, tool_ctx
from tests.support.ports import free_port
from tools.report_bug import MAX_REPORTS_PER_DAY
from tools.report_bug import TOOL as REPORT


async def test_mail_to_the_team_with_the_conversation_id(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env(BUG_REPORT_EMAIL="bugs@deblo.test"))
    user = await add_user(services, display_name="Awa")
    delivered = Delivered()
    result = await REPORT.run(tool_ctx(services, user, language="en", delivered=delivered),
                              {"description": "The quiz\r\nBcc: x@y.z never ends"})
    assert result["success"] is True and result["delivered_by"] == ["email"]
    [mail] = smtp.received
    assert mail.rcpt_tos == ["bugs@deblo.test"]
    assert mail.message["Subject"] == "[Deblo bug] conversation 4242" and mail.message["Bcc"] is None
    text = mail.message.get_body(("plain",)).get_content()
    assert "conversation 4242" in text and f"user {user.id} (Awa)" in text and "never ends" in text
    assert delivered.items == [{"text": "Thank you for reporting this problem! The team has received it.",
                                "media": None}]


async def test_daily_cap_and_empty_description(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env(BUG_REPORT_EMAIL="bugs@deblo.test"))
    user = await add_user(services)
    empty = await REPORT.run(tool_ctx(services, user, delivered=Delivered()), {"description": "  "})
    assert empty["success"] is False
    for _ in range(MAX_REPORTS_PER_DAY):
        ok = await REPORT.run(tool_ctx(services, user, delivered=Delivered()), {"description": "bug"})
        assert ok["success"] is True
    capped = await REPORT.run(tool_ctx(services, user, delivered=Delivered()), {"description": "bug"})
    assert capped["success"] is False
    assert len(smtp.received) == MAX_REPORTS_PER_DAY


async def test_smtp_down_is_an_error_and_nobody_is_thanked(make_services):
    services = await make_services(SMTP_HOST="127.0.0.1", SMTP_PORT=str(free_port()), SMTP_SECURITY="none",
                                   SMTP_FROM="bot@deblo.test", BUG_REPORT_EMAIL="bugs@deblo.test")
    user = await add_user(services)
    delivered = Delivered()
    result = await REPORT.run(tool_ctx(services, user, delivered=delivered), {"description": "bug"})
    assert result["success"] is False and "could not be delivered" in result["error"]
    assert delivered.items == []


async def test_offered_only_when_a_destination_is_configured(make_services):
    bare = await make_services()
    assert REPORT.unavailable(bare.settings) is not None
    mail_without_smtp = await make_services(BUG_REPORT_EMAIL="bugs@deblo.test")
    assert REPORT.unavailable(mail_without_smtp.settings) is not None
    whatsapp = await make_services(BUG_REPORT_WHATSAPP="+2250799999999",
                                   TWILIO_WHATSAPP_FROM="whatsapp:+14155238886")
    assert REPORT.unavailable(whatsapp.settings) is None
    assert REPORT.modes == frozenset({"child", "pro", "parent"}) and REPORT.side_effects
