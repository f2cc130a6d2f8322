"""A child's distress through the whole bot: a signed webhook in, the safety handler, the real
pipeline, Twilio (FakeTwilio), the model (FakeLLM), SMTP (aiosmtpd) and a moderation endpoint
(FakeModeration)."""

from __future__ import annotations

import logging
import re
from email.message import EmailMessage
from typing import Any

import pytest

from bot.storage.models import SafetyFlag
from tests.fakes.llm import Step
from tests.fakes.moderation import FakeModeration
from tests.support.admin import logged_in, make_operator
from tests.support.harness import new_sid
from tests.support.pedagogy import PARENT, STUDENT, confirm, say
from tests.support.safety import BENINESE, CAMEROONIAN, DISTRESS, IVORIAN, add_operator, enrol, flags


def record_texts_at_model_calls(h: Any, phone: str) -> list[list[str]]:
    """What the user had been sent each time the model was called."""
    seen: list[list[str]] = []

    def respond(body: dict[str, Any]) -> Step:
        seen.append([h.twilio.shown(m) for m in h.twilio.to(phone)])
        return Step("text", content="On peut reprendre ton exercice quand tu veux.")

    h.llm.responder = respond
    return seen


async def test_distress_gets_the_helpline_first_then_the_tutor_and_one_flag(harness: Any) -> None:
    h = harness
    ivorian = await h.make_user(IVORIAN, mode="child")
    seen = record_texts_at_model_calls(h, IVORIAN)
    sid = new_sid()
    assert (await h.inbound(IVORIAN, DISTRESS, sid=sid))[0] == 200
    await h.settle()
    texts = await h.texts_to(IVORIAN)
    assert len(texts) == 2 and "116" in texts[0] and "Merci de me l'avoir dit" in texts[0]
    assert texts[1] == "On peut reprendre ton exercice quand tu veux."  # the tutor still answers
    assert seen and len(seen[0]) == 1 and "116" in seen[0][0]  # the model only after the caring reply
    assert DISTRESS in h.llm.all_request_text()
    # Twilio retries the same webhook; then the child says it again: still one flag, one caring reply more.
    assert (await h.inbound(IVORIAN, DISTRESS, sid=sid))[0] == 200
    await h.settle()
    assert len(await h.texts_to(IVORIAN)) == 2
    await h.inbound(IVORIAN, DISTRESS)
    await h.settle()
    assert len(await h.texts_to(IVORIAN)) == 4
    [flag] = await flags(h)
    assert (flag.user_id, flag.category, flag.source) == (ivorian.id, "self_harm", "phrases")
    assert flag.excerpt == DISTRESS and flag.acknowledged_at is None


async def test_the_helpline_is_the_one_of_the_childs_country(harness: Any) -> None:
    h = harness
    await h.make_user(CAMEROONIAN, mode="child")
    await h.make_user(BENINESE, mode="guest", role=None)  # no profile yet: may be a child
    await h.make_user("+5511987654321", mode="child", language="en")  # a country with no helpline known
    await h.inbound(CAMEROONIAN, "Mon oncle me frappe tous les soirs")
    await h.inbound(BENINESE, "jveux mourir", channel="sms")
    await h.inbound("+5511987654321", "I want to kill myself")
    await h.settle()
    cameroon, benin, brazil = [(await h.texts_to(p))[0] for p in (CAMEROONIAN, BENINESE, "+5511987654321")]
    assert "appeler gratuitement le 116" in cameroon
    assert "appeler gratuitement le 138" in benin
    assert "Thank you for telling me" in brazil and "call emergency services" in brazil
    assert "for free" not in brazil  # no number made up
    assert sorted(f.category for f in await flags(h)) == ["abuse_home", "self_harm", "self_harm"]


async def test_adults_are_not_looked_at(harness: Any) -> None:
    h = harness
    await h.make_user(IVORIAN, mode="pro")
    await h.make_user(CAMEROONIAN, mode="child", role="parent")
    await h.inbound(IVORIAN, "Je veux mourir, ce rapport est interminable")
    await h.inbound(CAMEROONIAN, "Je veux mourir de fatigue, mon fils ne fait rien")
    await h.settle()
    assert await h.texts_to(IVORIAN) == [h.llm.default_text]
    assert await h.texts_to(CAMEROONIAN) == [h.llm.default_text]
    assert await flags(h) == []


async def test_false_positives_get_the_lesson_only(harness: Any) -> None:
    h = harness
    await h.make_user(IVORIAN, mode="child")
    for text in ("Explique-moi la mort de Louis XVI", "J'ai failli mourir de rire en cours",
                 "Il me bat toujours aux échecs", "Pourquoi Camus parle du suicide ?"):
        await h.inbound(IVORIAN, text)
    await h.settle()
    assert await h.texts_to(IVORIAN) == [h.llm.default_text] * 4
    assert await flags(h) == []


async def test_teachers_and_admins_are_emailed_teachers_without_the_words(make_harness: Any,
                                                                            smtp_server: Any) -> None:
    smtp = smtp_server()
    h = await make_harness(**smtp.env(SAFETY_ALERT_EMAILS="veille@ong.test"))
    child = await h.make_user(IVORIAN, mode="child", display_name="Awa K.")
    await enrol(h, child.id, "3e B")
    await add_operator(h, "prof@ecole.test", "teacher", "3e B")
    await add_operator(h, "autre@ecole.test", "teacher", "4e A")  # not her class
    await add_operator(h, "direction@ecole.test", "admin")
    await h.inbound(IVORIAN, DISTRESS)
    await h.settle()
    by_address = {r.rcpt_tos[0]: r.message for r in smtp.received}
    assert sorted(by_address) == ["direction@ecole.test", "prof@ecole.test", "veille@ong.test"]
    assert all(len(r.rcpt_tos) == 1 for r in smtp.received)  # nobody sees who else was told
    [flag] = await flags(h)
    link = f"{h.settings.public_base_url}/admin/students/{child.id}"
    teacher = by_address["prof@ecole.test"].get_body(("plain",)).get_content()
    assert f"l'élève n° {child.id} (classe 3e B)" in teacher and link in teacher
    assert "se faire du mal" in teacher
    assert "personne ne m" not in teacher.lower() and "en finir" not in teacher and "Awa" not in teacher
    for admin in ("direction@ecole.test", "veille@ong.test"):
        body = by_address[admin].get_body(("plain",)).get_content()
        assert DISTRESS in body and link in body and f"Awa K. ({IVORIAN})" in body
    assert flag.source == "phrases"
    await h.inbound(IVORIAN, DISTRESS)  # said again while the flag is open: no e-mail more
    await h.settle()
    assert len(smtp.received) == 3 and len(await flags(h)) == 1


def plain_only(message: EmailMessage) -> str:
    """The body of a message that has no HTML part (no markup can make a link of the words)."""
    assert [part.get_content_type() for part in message.walk() if not part.is_multipart()] == ["text/plain"]
    return str(message.get_content())


async def test_twenty_distress_messages_from_a_new_number_are_no_relay(make_harness: Any,
                                                                       smtp_server: Any) -> None:
    smtp = smtp_server()
    h = await make_harness(**smtp.env(SAFETY_ALERTS_PER_DAY="13"))
    await make_operator(h, "direction@ecole.test")  # the admin, who acknowledges on the dashboard
    await add_operator(h, "prof@ecole.test", "teacher", "3e B")
    child = await h.make_user(IVORIAN, mode="child")
    await enrol(h, child.id, "3e B")
    links = "regarde http://evil.example/x?id=1 et www.evil.example"
    # The child-chosen WhatsApp profile name carries a link too.
    await h.inbound(IVORIAN, f"{DISTRESS} {links}", extra={"ProfileName": "Awa clique https://pwn.example"})
    await h.settle()
    admin = await logged_in(h, "direction@ecole.test")
    csrf = await admin.csrf()
    try:
        # One new number (a guest: it may be a child), twenty distress messages with links; the admin
        # acknowledges each flag on the dashboard, so each message raises a new one. Then another
        # new number, five more: past the deployment's day (13 e-mailed).
        for number, times in (("+2250700000199", 20), ("+2250700000198", 5)):
            for n in range(times):
                await h.inbound(number, f"{DISTRESS} http://evil.example/{n}")
                await h.settle()
                [flag] = [f for f in await flags(h) if f.acknowledged_at is None and f.user_id != child.id]
                _status, page, _ = await admin.get("/admin/flags")
                acknowledge = f"/admin/flags/{flag.id}/acknowledge"
                assert acknowledge in page  # shown on the dashboard
                assert (await admin.post(acknowledge, {"csrf_token": csrf}))[0] == 303
    finally:
        await admin.close()
    assert len(await flags(h)) == 26  # every flag raised and kept
    bodies = [(r.rcpt_tos[0], plain_only(r.message)) for r in smtp.received]
    mailed = [sum(number in body for _, body in bodies) for number in ("+2250700000199", "+2250700000198")]
    assert mailed == [10, 2]  # SAFETY_ALERTS_PER_HOUR (10) for the first, then the day's 13 in all
    link = f"{h.settings.public_base_url}/admin/students/{child.id}"
    [teacher] = [body for to, body in bodies if to == "prof@ecole.test"]
    assert re.findall(r"\S+://\S+", teacher) == [link, link]  # no link but the dashboard's, no text
    assert all(word not in teacher for word in ("evil", "pwn", "Awa", "clique", "en finir", "regarde"))
    assert f"l'élève n° {child.id} (classe 3e B)" in teacher
    [about_child] = [body for to, body in bodies if to == "direction@ecole.test" and IVORIAN in body]
    assert "hxxp://evil[.]example/x?id=1 et www[.]evil[.]example" in about_child
    assert f"Awa clique hxxps://pwn[.]example ({IVORIAN})" in about_child
    assert re.findall(r"(?i)\bhttps?://\S+", about_child) == [link, link]  # the dashboard's, no other
    assert "evil.example" not in about_child and "pwn.example" not in about_child


async def test_an_email_smtp_refuses_is_logged_as_not_sent(make_harness: Any, caplog: Any) -> None:
    # SMTP points at a closed port: the child is still answered and flagged.
    h = await make_harness(SMTP_HOST="127.0.0.1", SMTP_PORT="9", SMTP_SECURITY="none",
                           SMTP_FROM="bot@deblo.test", SMTP_TIMEOUT_S="2")
    await add_operator(h, "direction@ecole.test", "admin")
    await h.make_user(IVORIAN, mode="child")
    with caplog.at_level(logging.INFO, logger="bot.safety.notify"):
        await h.inbound(IVORIAN, DISTRESS)
        await h.settle()
    assert len(await flags(h)) == 1 and "116" in (await h.texts_to(IVORIAN))[0]
    assert any(r.getMessage() == "safety alert e-mail not sent" for r in caplog.records)
    [summary] = [r for r in caplog.records if r.getMessage() == "safety alert e-mails"]
    assert (summary.sent, summary.recipients) == (0, 1)


async def test_the_moderation_endpoint_catches_what_the_phrases_miss(make_harness: Any,
                                                                     moderation: FakeModeration) -> None:
    moderation.flag("ne sers à rien", "self-harm", "self-harm/intent")
    moderation.flag("capitale", "violence/graphic")  # flagged, but not a category we act on
    # The local layers off but for the phrases: what the endpoint adds is what is tested here.
    h = await make_harness(MODERATION_BASE_URL=moderation.url, MODERATION_API_KEY=moderation.key,
                           SAFETY_MEANING="false")
    await h.make_user(IVORIAN, mode="child")
    await h.inbound(IVORIAN, "Je ne sers à rien, personne ne le remarquerait")
    await h.inbound(IVORIAN, "Quelle est la capitale du Sénégal ?")
    await h.inbound(IVORIAN, "Je veux mourir")  # the phrases know it: the endpoint is not asked
    await h.inbound(IVORIAN, "Merci beaucoup")  # too short to ask it
    await h.settle()
    assert [r["input"] for r in moderation.requests] == [
        "Je ne sers à rien, personne ne le remarquerait", "Quelle est la capitale du Sénégal ?"]
    assert moderation.requests[0]["model"] == "omni-moderation-latest"
    texts = await h.texts_to(IVORIAN)
    assert "116" in texts[0] and texts[2] == h.llm.default_text and "116" in texts[3]
    assert texts[5] == h.llm.default_text and len(texts) == 6
    [flag] = await flags(h)  # the second self_harm message finds the first flag open
    assert (flag.category, flag.source) == ("self_harm", "moderation")


@pytest.mark.parametrize("failure", ["error", "timeout"])
async def test_a_failing_moderation_endpoint_leaves_the_phrases(make_harness: Any, moderation: FakeModeration,
                                                                failure: str) -> None:
    moderation.flag("ne sers à rien", "self-harm/intent")
    if failure == "error":
        moderation.status = 500
    else:
        moderation.hang_s = 3
    h = await make_harness(MODERATION_BASE_URL=moderation.url, MODERATION_API_KEY=moderation.key,
                           MODERATION_TIMEOUT_S="0.3", SAFETY_MEANING="false")
    await h.make_user(IVORIAN, mode="child")
    await h.inbound(IVORIAN, "Je ne sers à rien")
    await h.inbound(IVORIAN, "il me frappe")
    await h.settle()
    assert len(moderation.requests) == 1
    texts = await h.texts_to(IVORIAN)
    assert texts[0] == h.llm.default_text and "116" in texts[1]  # answered as usual, then the helpline
    assert [(f.category, f.source) for f in await flags(h)] == [("abuse_home", "phrases")]


async def test_acknowledged_flag_lets_a_new_one_be_raised(harness: Any) -> None:
    h = harness
    await h.make_user(IVORIAN, mode="child")
    await h.inbound(IVORIAN, DISTRESS)
    await h.settle()
    async with h.services.sessions() as db:
        flag = await db.get(SafetyFlag, (await flags(h))[0].id)
        assert flag is not None
        flag.acknowledged_at = h.clock()
        await db.commit()
    await h.inbound(IVORIAN, DISTRESS)
    await h.settle()
    assert len(await flags(h)) == 2


@pytest.mark.parametrize("tell", [False, True])
async def test_parents_hear_of_a_flag_only_when_the_operator_chose(make_harness: Any, tell: bool) -> None:
    h = await make_harness(**({"SAFETY_TELL_PARENTS": "true"} if tell else {}))
    await h.make_user(STUDENT, mode="child", display_name="Awa")
    await say(h, STUDENT, f"PARENT {PARENT}")
    await confirm(h)
    await say(h, STUDENT, DISTRESS)
    [children] = await say(h, PARENT, "ENFANTS", channel="sms")
    assert "Awa" in children and "en finir" not in children  # never the child's words
    assert ("nous a inquiétés" in children) is tell
