"""send_email_to_user and draft_email against a real SMTP server (aiosmtpd)."""

from __future__ import annotations

from email import message_from_bytes, policy
from typing import Any

from sqlalchemy import delete, select

from bot import library, school
from bot.storage.models import ClassFileOpen, Cohort, CohortMember, User
from tests.support.outreach import Delivered, add_file, add_user, tool_ctx
from tools import by_name, for_mode
from tools.draft_email import TOOL as DRAFT
from tools.send_email_to_user import TOOL as SEND

OWN = "awa@exemple.ci"


async def _confirmed_user(services, **fields):
    return await add_user(services, email=OWN, email_verified=True, **fields)


async def test_sends_html_with_text_alternative_and_attachment(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env())
    user = await _confirmed_user(services)
    pdf = await add_file(services, user.id, "bilan.pdf", "application/pdf", b"%PDF-1.4 fake bilan")
    result = await SEND.run(tool_ctx(services, user), {
        "subject": "Ton bilan SYSCOHADA",
        "body": "<p>Bonjour Awa,</p><ul><li>Actif : 10</li><li>Passif : 10</li></ul>"
                "<script>alert(1)</script><a href='https://deblo.ai'>Deblo</a>",
        "file_ids": [pdf.id],
    })
    assert result["success"] is True, result
    assert result["sent_to"] == OWN and result["attachments"] == ["bilan.pdf"]
    assert len(smtp.received) == 1
    got = smtp.received[0]
    assert got.rcpt_tos == [OWN]
    assert got.mail_from == "bot@deblo.test"
    msg = got.message
    assert msg["To"] == OWN
    assert msg["Subject"] == "Ton bilan SYSCOHADA"
    assert "bot@deblo.test" in msg["From"] and msg["Message-ID"] and msg["Date"]
    plain = msg.get_body(("plain",)).get_content()
    html = msg.get_body(("html",)).get_content()
    assert "Bonjour Awa" in plain and "- Actif : 10" in plain and "Deblo (https://deblo.ai)" in plain
    assert "<li>Actif : 10</li>" in html
    assert "<script" not in html and "alert(1)" not in plain
    attachments = list(msg.iter_attachments())
    assert [a.get_filename() for a in attachments] == ["bilan.pdf"]
    assert attachments[0].get_content_type() == "application/pdf"
    assert attachments[0].get_content() == b"%PDF-1.4 fake bilan"


async def test_plain_text_body_becomes_html_too(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env())
    user = await _confirmed_user(services)
    args = {"subject": "Résumé", "body": "Ligne 1\n\nLigne 2 & <3"}
    result = await SEND.run(tool_ctx(services, user), args)
    assert result["success"] is True
    msg = smtp.received[0].message
    assert msg.get_body(("plain",)).get_content().replace("\r\n", "\n").strip() == "Ligne 1\n\nLigne 2 & <3"
    assert "<p>Ligne 2 &amp; &lt;3</p>" in msg.get_body(("html",)).get_content()


async def test_refuses_without_confirmed_address(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env())
    nobody = await add_user(services, "+2250700000002")
    pending = await add_user(services, "+2250700000003", email=OWN, email_verified=False,
                             pending_email=OWN)
    for user in (nobody, pending):
        result = await SEND.run(tool_ctx(services, user), {"subject": "x", "body": "y"})
        assert result["success"] is False and result["needs_email"] is True
        assert "EMAIL" in result["error"]
    assert smtp.received == []


async def test_refuses_any_other_recipient_or_header(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env())
    user = await _confirmed_user(services)
    attempts: list[dict[str, Any]] = [
        {"to": "boss@autre.com"},
        {"to": ["awa@exemple.ci", "boss@autre.com"]},
        {"cc": "boss@autre.com"},
        {"bcc": ["spy@evil.com"]},
        {"recipient": "boss@autre.com"},
        {"email": "AWA@exemple.ci\r\nBcc: spy@evil.com"},
        {"headers": {"Bcc": "spy@evil.com"}},
        {"reply_to": "spy@evil.com"},
    ]
    for extra in attempts:
        result = await SEND.run(tool_ctx(services, user), {"subject": "s", "body": "b", **extra})
        assert result["success"] is False and result.get("refused") is True, extra
    assert smtp.received == []
    # Naming the user's own address explicitly is not a different recipient.
    ok = await SEND.run(tool_ctx(services, user), {"subject": "s", "body": "b", "to": "Awa@EXEMPLE.ci"})
    assert ok["success"] is True
    assert smtp.received[0].rcpt_tos == [OWN]


async def test_subject_header_injection_stays_one_line(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env())
    user = await _confirmed_user(services)
    result = await SEND.run(tool_ctx(services, user), {
        "subject": "Devoir\r\nBcc: spy@evil.com\r\nX-Evil: 1", "body": "b"})
    assert result["success"] is True
    got = smtp.received[0]
    assert got.rcpt_tos == [OWN]
    assert got.message["Bcc"] is None and got.message["X-Evil"] is None
    assert got.message["Subject"] == "Devoir Bcc: spy@evil.com X-Evil: 1"


async def test_refuses_another_users_file(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env())
    user = await _confirmed_user(services)
    other = await add_user(services, "+2250700000009")
    theirs = await add_file(services, other.id, "secret.pdf", "application/pdf", b"%PDF secret")
    result = await SEND.run(tool_ctx(services, user), {"subject": "s", "body": "b", "file_ids": [theirs.id]})
    assert result["success"] is False and str(theirs.id) in result["error"]
    bad = await SEND.run(tool_ctx(services, user), {"subject": "s", "body": "b", "file_ids": ["abc"]})
    assert bad["success"] is False and "invalid file id" in bad["error"]
    assert smtp.received == []


async def test_attachment_size_cap(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env(EMAIL_MAX_ATTACHMENT_BYTES="100"))
    user = await _confirmed_user(services)
    big = await add_file(services, user.id, "big.txt", "text/plain", b"x" * 500)
    result = await SEND.run(tool_ctx(services, user), {"subject": "s", "body": "b", "file_ids": [big.id]})
    assert result["success"] is False and "too large" in result["error"]
    assert smtp.received == []


async def test_smtp_login(make_services, smtp_server):
    smtp = smtp_server(auth=("deblo", "s3cret"))
    good = await make_services(**smtp.env(SMTP_USER="deblo", SMTP_PASSWORD="s3cret"))
    user = await _confirmed_user(good)
    assert (await SEND.run(tool_ctx(good, user), {"subject": "s", "body": "b"}))["success"] is True
    bad = await make_services(**smtp.env(SMTP_USER="deblo", SMTP_PASSWORD="wrong"))
    user2 = await _confirmed_user(bad)
    result = await SEND.run(tool_ctx(bad, user2), {"subject": "s", "body": "b"})
    assert result["success"] is False and "login" in result["error"]
    assert len(smtp.received) == 1


async def test_smtp_down_or_hung_gives_an_error_result(make_services, smtp_server, silent_server):
    from tests.support.ports import free_port

    down = await make_services(SMTP_HOST="127.0.0.1", SMTP_PORT=str(free_port()), SMTP_SECURITY="none",
                               SMTP_FROM="bot@deblo.test")
    user = await _confirmed_user(down)
    result = await SEND.run(tool_ctx(down, user), {"subject": "s", "body": "b"})
    assert result["success"] is False and "cannot be reached" in result["error"]

    hung = await make_services(SMTP_HOST="127.0.0.1", SMTP_PORT=str(silent_server), SMTP_SECURITY="none",
                               SMTP_FROM="bot@deblo.test", SMTP_TIMEOUT_S="0.5")
    user = await _confirmed_user(hung)
    result = await SEND.run(tool_ctx(hung, user), {"subject": "s", "body": "b"})
    assert result["success"] is False and "in time" in result["error"]


async def test_not_offered_without_smtp(make_services):
    services = await make_services()
    assert SEND.unavailable(services.settings) == "SMTP_HOST is not set"
    names = {t.name for t in for_mode("pro", services.settings)}
    assert "send_email_to_user" not in names
    assert SEND.side_effects is True
    assert SEND.modes == frozenset({"child", "pro", "parent"})
    assert "to" not in SEND.parameters["properties"]


async def test_draft_is_saved_shown_and_never_sent(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env())
    user = await _confirmed_user(services)
    delivered = Delivered()
    result = await DRAFT.run(tool_ctx(services, user, delivered=delivered), {
        "to": ["client@entreprise.ci"], "cc": ["compta@entreprise.ci"],
        "subject": "Relance facture 2024-17",
        "body": "Bonjour,\n\nSauf erreur, la facture 2024-17 reste impayée.\n\nCordialement",
    })
    assert result["success"] is True and result["sent"] is False
    assert smtp.received == []
    [shown] = delivered.items
    assert "client@entreprise.ci" in shown["text"] and "Relance facture 2024-17" in shown["text"]
    assert "reste impayée" in shown["text"] and "non envoyé" in shown["text"]
    assert result["link"] in shown["text"] and f"/files/{result['file_id']}/" in result["link"]
    async with services.sessions() as db:
        row = await library.get_file(db, user.id, result["file_id"])
    assert row is not None
    eml = message_from_bytes(await library.read_bytes(services, row), policy=policy.default)
    assert eml["To"] == "client@entreprise.ci" and eml["Cc"] == "compta@entreprise.ci"
    assert eml["From"] == OWN and eml["X-Unsent"] == "1"
    plain = eml.get_body(("plain",))
    assert plain is not None and "reste impayée" in plain.get_content()


async def test_draft_rejects_bad_addresses_and_is_pro_only(make_services):
    services = await make_services()
    user = await add_user(services)
    result = await DRAFT.run(tool_ctx(services, user, delivered=Delivered()), {
        "to": ["client@entreprise.ci\r\nBcc: x@y.z"], "subject": "s", "body": "b"})
    assert result["success"] is False and "invalid address" in result["error"]
    assert DRAFT.modes == frozenset({"pro", "parent"})  # a parent's tools are a pro's, minus quizzes
    assert "draft_email" not in {t.name for t in for_mode("child", services.settings)}
    assert "draft_email" in {t.name for t in for_mode("pro", services.settings)}
    assert by_name()["draft_email"] is DRAFT
    async with services.sessions() as db:
        assert (await db.get(User, user.id)) is not None
        assert await library.count_files(db, user.id) == 0


async def test_starttls_and_implicit_tls_with_certificate_checks(make_services, smtp_server, test_ca):
    starttls = smtp_server(starttls=test_ca.server_context)
    services = await make_services(**starttls.env(SMTP_SECURITY="starttls", SMTP_CA_FILE=test_ca.ca_file))
    user = await _confirmed_user(services)
    assert (await SEND.run(tool_ctx(services, user), {"subject": "s", "body": "b"}))["success"] is True
    assert starttls.received[0].tls is True

    implicit = smtp_server(implicit_tls=test_ca.server_context)
    services = await make_services(**implicit.env(SMTP_SECURITY="tls", SMTP_CA_FILE=test_ca.ca_file))
    user = await _confirmed_user(services)
    assert (await SEND.run(tool_ctx(services, user), {"subject": "s", "body": "b"}))["success"] is True
    assert implicit.received[0].tls is True

    # Without our CA the server's certificate is not trusted: nothing is sent in the clear instead.
    untrusted = await make_services(**starttls.env(SMTP_SECURITY="starttls"))
    user = await _confirmed_user(untrusted)
    result = await SEND.run(tool_ctx(untrusted, user), {"subject": "s", "body": "b"})
    assert result["success"] is False and "certificate" in result["error"]
    # A server that requires STARTTLS refuses a plain session.
    plain = await make_services(**starttls.env(SMTP_SECURITY="none"))
    user = await _confirmed_user(plain)
    assert (await SEND.run(tool_ctx(plain, user), {"subject": "s", "body": "b"}))["success"] is False
    assert len(starttls.received) == 1


async def test_markdown_body_is_rendered(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env())
    user = await _confirmed_user(services)
    body = "## Bilan\n\n**Actif** : 10 000 FCFA\n\n- caisse\n- banque\n\n[Source](https://ohada.org)"
    assert (await SEND.run(tool_ctx(services, user), {"subject": "Bilan", "body": body}))["success"]
    msg = smtp.received[0].message
    html = msg.get_body(("html",)).get_content()
    assert "<h2>Bilan</h2>" in html and "<strong>Actif</strong>" in html and "<li>caisse</li>" in html
    assert '<a href="https://ohada.org"' in html
    assert msg.get_body(("plain",)).get_content().replace("\r\n", "\n").strip() == body


async def test_a_class_file_is_attached_only_for_a_student_of_the_class_now(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env())
    awa = await _confirmed_user(services)
    kofi = await add_user(services, "+2250700000010", email="kofi@exemple.ci", email_verified=True)
    async with services.sessions() as db:
        mine, other = Cohort(name="6e A"), Cohort(name="6e B")
        db.add_all([mine, other])
        await db.flush()
        db.add_all([CohortMember(cohort_id=mine.id, user_id=awa.id),
                    CohortMember(cohort_id=other.id, user_id=kofi.id)])
        await db.commit()
    lesson = await school.add_class_file(services, mine, "fractions.txt", b"Les fractions : 1/2 + 1/4.")
    args = {"subject": "Le cours", "body": "Voici le cours.", "file_ids": [lesson.id]}
    sent = await SEND.run(tool_ctx(services, awa, mode="student"), args)
    assert sent["success"] is True and sent["attachments"] == ["fractions.txt"], sent
    attached = list(smtp.received[0].message.iter_attachments())
    assert [a.get_filename() for a in attached] == ["fractions.txt"]
    assert "1/2 + 1/4" in str(attached[0].get_content())
    # A student of another class, then Awa once she has left hers: no such file, nothing sent.
    refused = await SEND.run(tool_ctx(services, kofi, mode="student"), args)
    assert refused["success"] is False and str(lesson.id) in refused["error"]
    async with services.sessions() as db:
        await db.execute(delete(CohortMember).where(CohortMember.user_id == awa.id))
        await db.commit()
    left = await SEND.run(tool_ctx(services, awa, mode="student"), args)
    assert left["success"] is False and str(lesson.id) in left["error"]
    assert len(smtp.received) == 1
    async with services.sessions() as db:  # sent to her: an opening, as the teacher sees it
        opens = [(o.file_id, o.user_id, o.count) for o in await db.scalars(select(ClassFileOpen))]
    assert opens == [(lesson.id, awa.id, 1)]
