"""A person follows a flag up, through the whole bot: the dashboard's flag page (a logged-in client),
a person's message to the child through FakeTwilio, the child's messages by signed webhooks while
the person holds the conversation (the model, FakeLLM, not asked), then the tutor again once the
person hands back or the hold lapses; who may do it (404 otherwise), CSRF, the record of reads, and
WhatsApp's 24 h window."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from bot.storage.models import SafetyFlag, SafetyFlagEvent
from tests.support.admin import Client, add_flag, csrf_of, logged_in, make_cohort, make_operator
from tests.support.safety import DISTRESS, IVORIAN, flags

NOTICE = "Une personne de l'école lit tes messages et te répond bientôt."
TUTOR = "On reprend les fractions quand tu veux."
SENT = "Envoyé : Twilio a accepté le message."


def _nonce(page: str) -> str:
    found = re.search(r'name="nonce" value="([^"]+)"', page)
    assert found, "no reply form on the page"
    return found.group(1)


async def _write(client: Client, flag_id: int, text: str) -> tuple[int, str, dict[str, str]]:
    """Opens the flag's page and sends its reply form with `text`; the answer and the form sent."""
    status, page, _ = await client.get(f"/admin/flags/{flag_id}")
    assert status == 200, page[:300]
    form = {"csrf_token": csrf_of(page), "nonce": _nonce(page), "text": text}
    status, page, _ = await client.post(f"/admin/flags/{flag_id}/reply", form)
    return status, page, form


async def _posts(client: Client, flag_id: int, csrf: str | None) -> list[int]:
    """The statuses of the flag's three POSTs (write, take, hand back), with `csrf` or without one."""
    token = {"csrf_token": csrf} if csrf is not None else {}
    forms = {"reply": {"nonce": "n" * 24, "text": "Bonjour"}, "take": {}, "release": {}}
    return [(await client.post(f"/admin/flags/{flag_id}/{action}", {**token, **form}))[0]
            for action, form in forms.items()]


async def _events(h: Any, action: str | None = None) -> list[SafetyFlagEvent]:
    async with h.services.sessions() as db:
        query = select(SafetyFlagEvent).order_by(SafetyFlagEvent.id)
        if action is not None:
            query = query.where(SafetyFlagEvent.action == action)
        return list((await db.scalars(query)).all())


async def _flag(h: Any, flag_id: int) -> SafetyFlag:
    async with h.services.sessions() as db:
        flag = await db.get(SafetyFlag, flag_id)
    assert flag is not None
    return flag


async def test_a_persons_message_reaches_the_child_and_the_tutor_waits_until_handed_back(
        harness: Any) -> None:
    h = harness
    assert h.settings.safety.human_hold_s == 86400 and not h.settings.safety.safety_teachers_may_reply
    h.llm.default_text = TUTOR
    await h.make_user(IVORIAN, display_name="Awa K.")
    admin_id = await make_operator(h, "direction@ecole.ci")
    await h.inbound(IVORIAN, DISTRESS)
    await h.settle()
    [flag] = await flags(h)
    admin = await logged_in(h, "direction@ecole.ci")
    try:
        status, page, _ = await admin.get(f"/admin/flags/{flag.id}")
        assert status == 200 and "Le tuteur répond à l&#39;élève." in page
        lines = page.split('id="lines"')[1].split("</ol>")[0]
        assert lines.index("en finir") < lines.index(TUTOR)  # the child's words, then the tutor's
        [read] = await _events(h, "read")
        assert (read.flag_id, read.operator_id, read.operator_email, read.created_at) == (
            flag.id, admin_id, "direction@ecole.ci", h.clock())

        status, page, form = await _write(admin, flag.id,
                                          "Bonjour Awa, je suis Mme Diallo. Tu peux me parler.")
        assert status == 200 and SENT in page
        assert (await h.texts_to(IVORIAN))[-1] == (
            "Message d'une personne de l'école :\nBonjour Awa, je suis Mme Diallo. Tu peux me parler.")
        sent = len(h.twilio.to(IVORIAN))
        assert (await admin.post(f"/admin/flags/{flag.id}/reply", form))[0] == 200  # the same form again
        assert len(h.twilio.to(IVORIAN)) == sent  # sent once
        assert (await _flag(h, flag.id)).held_by == admin_id

        asked = len(h.llm.requests)
        for text in ("Merci madame", "A demain madame"):
            await h.inbound(IVORIAN, text)
        await h.settle()
        assert len(h.llm.requests) == asked  # the model is not asked while a person holds it
        texts = await h.texts_to(IVORIAN)
        assert texts[sent:] == [NOTICE]  # told once
        status, page, _ = await admin.get(f"/admin/flags/{flag.id}")
        lines = page.split('id="lines"')[1].split("</ol>")[0]
        assert lines.index("Mme Diallo") < lines.index("Merci madame") < lines.index("A demain madame")
        assert "Tenue par : direction@ecole.ci" in page

        status, _, resp = await admin.post(f"/admin/flags/{flag.id}/release", {"csrf_token": csrf_of(page)})
        assert status == 303 and resp.headers["Location"] == f"/admin/flags/{flag.id}"
        await h.inbound(IVORIAN, "Tu peux m'aider en maths ?")
        await h.settle()
        assert len(h.llm.requests) == asked + 1 and (await h.texts_to(IVORIAN))[-1] == TUTOR
        last = h.llm.requests[-1]["messages"]
        assert "Merci madame" in str(last) and "Mme Diallo" in str(last)  # the tutor sees what happened
    finally:
        await admin.close()
    assert [e.action for e in await _events(h) if e.action != "read"] == ["reply", "release"]
    assert (await _flag(h, flag.id)).held_at is None


async def test_the_tutor_answers_again_after_human_hold_s_without_a_word_from_the_person(
        make_harness: Any) -> None:
    h = await make_harness(HUMAN_HOLD_S="3600")
    h.llm.default_text = TUTOR
    child = await h.make_user(IVORIAN)
    flag_id = await add_flag(h, child.id, DISTRESS)
    await make_operator(h, "direction@ecole.ci")
    admin = await logged_in(h, "direction@ecole.ci")
    try:
        status, page, _ = await admin.get(f"/admin/flags/{flag_id}")
        status, _, _ = await admin.post(f"/admin/flags/{flag_id}/take", {"csrf_token": csrf_of(page)})
        assert status == 303
    finally:
        await admin.close()
    await h.inbound(IVORIAN, "Bonjour")
    await h.settle()
    h.clock.advance(seconds=3599)
    await h.inbound(IVORIAN, DISTRESS)  # still held: the helpline at once all the same, not the model
    await h.settle()
    texts = await h.texts_to(IVORIAN)
    assert h.llm.requests == [] and texts[0] == NOTICE and "116" in texts[1] and len(texts) == 2
    h.clock.advance(seconds=2)  # an hour since the person took it, without a word from them
    await h.inbound(IVORIAN, "Tu peux m'aider en maths ?")
    await h.settle()
    assert len(h.llm.requests) == 1 and await h.texts_to(IVORIAN) == [*texts, TUTOR]
    assert [e.action for e in await _events(h) if e.action != "read"] == ["take", "expire"]
    assert (await _flag(h, flag_id)).held_at is None


async def test_a_teacher_without_the_setting_cannot_read_or_write(harness: Any) -> None:
    h = harness
    child = await h.make_user(IVORIAN, display_name="Awa K.")
    await make_operator(h, "prof@ecole.ci", role="teacher", cohorts=[await make_cohort(h, "3e B", [child])])
    await make_operator(h, "direction@ecole.ci")
    flag_id = await add_flag(h, child.id, DISTRESS)
    teacher = await logged_in(h, "prof@ecole.ci")
    admin = await logged_in(h, "direction@ecole.ci")
    try:
        status, page, _ = await teacher.get("/admin/flags")
        assert status == 200 and "Awa K." in page and f'href="/admin/flags/{flag_id}"' not in page
        assert (await teacher.get(f"/admin/flags/{flag_id}"))[0] == 404
        assert await _posts(teacher, flag_id, csrf_of(page)) == [404, 404, 404]
        assert await _posts(teacher, flag_id, None) == [403, 403, 403]
        # An admin may, but not without the form's CSRF token either.
        assert (await admin.get(f"/admin/flags/{flag_id}"))[0] == 200
        assert await _posts(admin, flag_id, None) == [403, 403, 403]
    finally:
        await teacher.close()
        await admin.close()
    assert h.twilio.to(IVORIAN) == []
    assert [(e.action, e.operator_email) for e in await _events(h)] == [("read", "direction@ecole.ci")]
    assert (await _flag(h, flag_id)).held_at is None


async def test_with_the_setting_a_teacher_of_the_class_may_and_another_may_not(make_harness: Any) -> None:
    h = await make_harness(SAFETY_TEACHERS_MAY_REPLY="true")
    child = await h.make_user(IVORIAN, language="en", display_name="Awa K.")
    own = await make_operator(h, "prof@ecole.ci", "teacher", [await make_cohort(h, "3e B", [child])])
    await make_operator(h, "autre@ecole.ci", "teacher", [await make_cohort(h, "4e A", [])])
    flag_id = await add_flag(h, child.id, DISTRESS)
    other = await logged_in(h, "autre@ecole.ci")
    teacher = await logged_in(h, "prof@ecole.ci")
    try:
        assert (await other.get(f"/admin/flags/{flag_id}"))[0] == 404
        assert await _posts(other, flag_id, await other.csrf()) == [404, 404, 404]
        status, page, _ = await teacher.get("/admin/flags")
        assert f'href="/admin/flags/{flag_id}"' in page
        status, page, _ = await _write(teacher, flag_id, "Hello Awa, I am your teacher.")
        assert status == 200 and "Envoyé" in page
    finally:
        await other.close()
        await teacher.close()
    assert await h.texts_to(IVORIAN) == [
        "Message from a person at your school:\nHello Awa, I am your teacher."]
    assert (await _flag(h, flag_id)).held_by == own
    assert {e.operator_email for e in await _events(h)} == {"prof@ecole.ci"}


@pytest.mark.parametrize("channel", ["whatsapp", "sms"])
async def test_outside_the_window_nothing_is_sent_nor_said_to_be(harness: Any, channel: str) -> None:
    h = harness
    long_ago = h.clock() - timedelta(hours=25)
    child = await h.make_user(IVORIAN, last_channel=channel, last_inbound_at=long_ago,
                              last_whatsapp_inbound_at=long_ago)
    flag_id = await add_flag(h, child.id, DISTRESS)
    await make_operator(h, "direction@ecole.ci")
    admin = await logged_in(h, "direction@ecole.ci")
    try:
        status, page, _ = await admin.get(f"/admin/flags/{flag_id}")
        assert status == 200 and 'id="window-shut"' in page and 'name="nonce"' not in page
        form = {"csrf_token": csrf_of(page), "nonce": "n" * 24, "text": "Bonjour Awa"}
        status, page, _ = await admin.post(f"/admin/flags/{flag_id}/reply", form)
        said = html.unescape(page)
        assert status == 409 and "Non envoyé : l'élève n'a pas écrit depuis plus de 24 heures" in said
        assert "Envoyé" not in said.replace("Non envoyé", "")
    finally:
        await admin.close()
    assert h.twilio.to(IVORIAN) == []
    assert [e.detail for e in await _events(h, "reply")] == ["window_closed"]
    assert (await _flag(h, flag_id)).held_at is None


async def test_a_message_twilio_refuses_is_not_said_to_be_sent(harness: Any) -> None:
    h = harness
    child = await h.make_user(IVORIAN)
    flag_id = await add_flag(h, child.id, DISTRESS)
    await make_operator(h, "direction@ecole.ci")
    admin = await logged_in(h, "direction@ecole.ci")
    try:
        h.twilio.fail_next("21211")
        status, page, _ = await _write(admin, flag_id, "Bonjour Awa")
        assert status == 502 and "Non envoyé : Twilio ne l&#39;a pas accepté (refused)" in page
        assert "Envoyé :" not in page and "Bonjour Awa</textarea>" in page  # the words kept to try again
    finally:
        await admin.close()
    assert h.twilio.to(IVORIAN) == []
    assert [e.detail for e in await _events(h, "reply")] == ["refused"]
    assert (await _flag(h, flag_id)).held_at is None
