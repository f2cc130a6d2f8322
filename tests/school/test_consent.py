"""Consent for minors (CONSENT_MODE) through the real webhook: a child tutored for the grace, then
told how to get a parent's consent and given the helpline only; the parent's OUI from their own
number records it and the tutor answers again; a class import records the school's; `users show`,
`users export` and `users forget` as the operator runs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.config import ConfigError, load_settings
from bot.storage.models import Consent, User
from tests.support.console import console, users
from tests.support.pedagogy import OTHER, PARENT, STUDENT, confirm, latest_code, link_status, say
from tests.support.safety import DISTRESS

ASKED = "il me faut l'accord d'un parent"
WAITING = "J'attends l'accord de ton parent"
TUTOR = "D'accord."  # the fake model's answer when nothing else was pushed


async def consents(h: Any) -> list[tuple[int, int | None, str, str]]:
    async with h.services.sessions() as db:
        rows = await db.scalars(select(Consent).order_by(Consent.id))
        return [(c.student_id, c.given_by_id, c.given_by, c.channel) for c in rows]


async def tutored(h: Any, phone: str, body: str = "Explique-moi les fractions") -> bool:
    """True when the model answered this message, False when it was not called."""
    calls = len(h.llm.requests)
    texts = await say(h, phone, body)
    if len(h.llm.requests) > calls:
        assert texts[0] == TUTOR, texts  # (a first message is then welcomed)
        return True
    return False


async def test_none_never_asks(make_harness: Any) -> None:
    h = await make_harness(CONSENT_GRACE_MESSAGES="1")  # CONSENT_MODE defaults to none
    await h.make_user(STUDENT, mode="child")
    for _ in range(3):
        assert await tutored(h, STUDENT)
    assert await consents(h) == []


async def test_a_pro_and_a_parent_are_never_asked(make_harness: Any) -> None:
    h = await make_harness(CONSENT_MODE="parent", CONSENT_GRACE_MESSAGES="0")
    await h.make_user(STUDENT, mode="pro")
    await h.make_user(PARENT, mode="child", role="parent")
    for phone in (STUDENT, PARENT):
        assert await tutored(h, phone)


async def test_parent_mode_grace_then_asked_then_the_parents_oui_resumes(make_harness: Any) -> None:
    h = await make_harness(CONSENT_MODE="parent", CONSENT_GRACE_MESSAGES="2")
    child = await h.make_user(STUDENT, mode="child")
    assert await tutored(h, STUDENT) and await tutored(h, STUDENT)
    calls = len(h.llm.requests)
    [asked] = await say(h, STUDENT, "Et les décimaux ?")
    assert ASKED in asked and "PARENT +225" in asked and "116" in asked, asked  # never silence
    [again] = await say(h, STUDENT, "MENU")  # commands are not reached either
    assert ASKED in again and len(h.llm.requests) == calls
    [sent] = await say(h, STUDENT, f"PARENT {PARENT}")
    assert "J'ai envoyé un SMS" in sent
    [invitation] = await h.texts_to(PARENT)  # one SMS, the consent said in it
    assert "Votre OUI l'autorise aussi à utiliser Deblo" in invitation, invitation
    [waiting] = await say(h, STUDENT, "Alors ?")
    assert WAITING in waiting
    assert await consents(h) == []
    # The parent answers by SMS from their own number, with the code the SMS carried.
    replies = await confirm(h, channel="sms")
    assert any("Merci" in t for t in replies)
    async with h.services.sessions() as db:
        parent = await db.scalar(select(User).where(User.phone == PARENT))
        [row] = await db.scalars(select(Consent))
    assert parent is not None
    assert (row.student_id, row.given_by_id) == (child.id, parent.id)
    assert (row.given_by, row.channel) == (PARENT, "sms")
    assert row.given_at == h.clock()
    assert any("donné son accord" in t for t in await h.texts_to(STUDENT))
    assert await tutored(h, STUDENT)


async def test_whatsapp_oui_records_the_channel(make_harness: Any) -> None:
    h = await make_harness(CONSENT_MODE="parent", CONSENT_GRACE_MESSAGES="0")
    await h.make_user(STUDENT, mode="child")
    await say(h, STUDENT, f"PARENT {PARENT}")
    await confirm(h, channel="whatsapp")
    assert [c[2:] for c in await consents(h)] == [(PARENT, "whatsapp")]


async def test_without_consent_distress_still_gets_the_helpline(make_harness: Any) -> None:
    h = await make_harness(CONSENT_MODE="parent", CONSENT_GRACE_MESSAGES="1")
    await h.make_user(STUDENT, mode="child")
    assert await tutored(h, STUDENT)
    calls = len(h.llm.requests)
    [caring] = await say(h, STUDENT, DISTRESS)
    assert "Merci de me l'avoir dit" in caring and "116" in caring, caring
    assert len(h.llm.requests) == calls  # the helpline, and no tutoring
    [asked] = await say(h, STUDENT, "Tu peux m'aider pour mon devoir ?")
    assert ASKED in asked and "116" in asked


async def test_someone_else_saying_oui_records_nothing(make_harness: Any) -> None:
    h = await make_harness(CONSENT_MODE="parent", CONSENT_GRACE_MESSAGES="0")
    await h.make_user(STUDENT, mode="child")
    await say(h, STUDENT, f"PARENT {PARENT}")
    code = await latest_code(h)
    # Another number (even one that knows the code), and the child themself, answer OUI with it.
    await say(h, OTHER, f"OUI {code}", channel="sms")
    [still] = await say(h, STUDENT, f"OUI {code}")
    assert WAITING in still
    assert await consents(h) == []
    [still] = await say(h, STUDENT, "Bonjour")
    assert WAITING in still


async def test_school_import_records_the_schools_consent(make_harness: Any, tmp_path: Path) -> None:
    h = await make_harness(CONSENT_MODE="school", CONSENT_GRACE_MESSAGES="0")
    assert (await console(h, "cohorts", "create", "6e A")).code == 0
    roster = tmp_path / "class.csv"
    roster.write_text(f"phone,name,level,parent_phone\n{STUDENT},Awa Koné,6e,\n", encoding="utf-8")
    run = await console(h, "cohorts", "import", "6e A", str(roster), "--school", "Lycée Moderne")
    assert run.code == 0 and "consentement de l'école enregistré pour 1" in run.out, run.out + run.err
    again = await console(h, "cohorts", "import", "6e A", str(roster), "--school", "Lycée Moderne")
    assert again.code == 0 and "rien n'a changé" in again.out, again.out  # one consent, not two
    child = await h.user(STUDENT)
    assert child is not None
    assert await consents(h) == [(child.id, None, "school 'Lycée Moderne', class '6e A'", "school")]
    for _ in range(2):
        assert await tutored(h, STUDENT)
    shown = await users(h, "show", STUDENT)
    assert "consent:     by school 'Lycée Moderne', class '6e A' on " in shown.out and "(school)" in shown.out


async def test_a_parent_the_school_linked_is_asked_for_their_own_oui(make_harness: Any,
                                                                    tmp_path: Path) -> None:
    """In parent mode a class import is no consent, and its confirmed link no dead end: PARENT with
    that parent's number asks them for their OUI, which records the consent."""
    h = await make_harness(CONSENT_MODE="parent", CONSENT_GRACE_MESSAGES="0")
    assert (await console(h, "cohorts", "create", "6e A")).code == 0
    roster = tmp_path / "class.csv"
    roster.write_text(f"phone,name,level,parent_phone\n{STUDENT},Awa,6e,{PARENT}\n", encoding="utf-8")
    assert (await console(h, "cohorts", "import", "6e A", str(roster))).code == 0
    assert await consents(h) == [] and await link_status(h) == "confirmed"
    [asked] = await say(h, STUDENT, "Bonjour")
    assert ASKED in asked
    [sent] = await say(h, STUDENT, f"PARENT {PARENT}")
    assert "J'ai envoyé un SMS" in sent, sent
    assert "Votre OUI l'autorise aussi" in (await h.texts_to(PARENT))[-1]
    [waiting] = await say(h, STUDENT, "Alors ?")
    assert WAITING in waiting and await link_status(h) == "confirmed"  # still followed meanwhile
    await say(h, OTHER, f"OUI {await latest_code(h)}", channel="sms")
    assert await consents(h) == []
    await confirm(h, channel="sms")
    assert [c[2:] for c in await consents(h)] == [(PARENT, "sms")] and await link_status(h) == "confirmed"
    assert await tutored(h, STUDENT)


async def test_show_export_and_forgetting_the_parent(make_harness: Any) -> None:
    h = await make_harness(CONSENT_MODE="parent", CONSENT_GRACE_MESSAGES="0")
    await h.make_user(STUDENT, mode="child")
    await say(h, STUDENT, f"PARENT {PARENT}")
    await confirm(h, channel="sms")
    when = h.clock().isoformat()
    shown = await users(h, "show", STUDENT)
    assert shown.code == 0 and f"consent:     by {PARENT} on {when} (sms)" in shown.out, shown.out
    as_json = json.loads((await users(h, "show", STUDENT, "--json")).out)
    assert as_json["consent"]["for_me"] == [{"who": PARENT, "when": when, "channel": "sms"}]
    exported = json.loads((await users(h, "export", STUDENT)).out)
    assert exported["account"]["consent"]["for_me"] == [{"who": PARENT, "when": when, "channel": "sms"}]
    [row] = exported["data"]["consents"]
    assert (row["given_by"], row["channel"]) == (PARENT, "sms")
    parent_export = json.loads((await users(h, "export", PARENT)).out)
    assert [c["who"] for c in parent_export["account"]["consent"]["given"]] == [PARENT]
    # The parent is forgotten: nothing of their consent is kept, and the child needs one again.
    forgot = await users(h, "forget", PARENT)
    assert forgot.code == 0 and "consents" in forgot.out, forgot.out
    assert await consents(h) == []
    shown = await users(h, "show", STUDENT)
    assert "consent:     none" in shown.out and PARENT not in shown.out, shown.out
    [asked] = await say(h, STUDENT, "Bonjour")
    assert ASKED in asked


async def test_english_child_is_told_in_english(make_harness: Any) -> None:
    h = await make_harness(CONSENT_MODE="parent", CONSENT_GRACE_MESSAGES="0")
    await h.make_user(STUDENT, mode="child", language="en")
    [asked] = await say(h, STUDENT, "Hello")
    assert "I need a parent's consent" in asked and "PARENT +225" in asked, asked


@pytest.mark.parametrize(("env", "said"), [
    ({"CONSENT_MODE": "always"}, "CONSENT_MODE must be none, parent or school, got 'always'"),
    ({"CONSENT_GRACE_MESSAGES": "-1"}, "CONSENT_GRACE_MESSAGES must be 0 or more, got '-1'"),
    ({"CONSENT_GRACE_MESSAGES": "vingt"}, "CONSENT_GRACE_MESSAGES must be a whole number, got 'vingt'"),
])
def test_a_bad_setting_is_named(env: dict[str, str], said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings(env)
    assert str(raised.value) == said


def test_the_settings_read_case_blind_with_their_defaults() -> None:
    assert load_settings({}).safety.consent_mode == "none"
    read = load_settings({"CONSENT_MODE": "School", "CONSENT_GRACE_MESSAGES": "5"}).safety
    assert (read.consent_mode, read.consent_grace_messages) == ("school", 5)


async def test_no_send_the_bot_starts_reaches_a_child_without_consent(make_harness: Any) -> None:
    """Past the grace, the child is not written to first either (a reminder here, as nudges, weekly
    notes and homework notices go the same way); once a parent consents, they are."""
    from datetime import UTC, datetime, timedelta

    from bot.accounts import record_consent
    from bot.assistant.tasks import create
    from bot.storage.models import ScheduledSend

    h = await make_harness(CONSENT_MODE="parent", CONSENT_GRACE_MESSAGES="1")
    h.clock.now = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)  # Abidjan: 09:00 local
    child = await h.make_user(STUDENT, mode="child")
    await say(h, STUDENT, "Bonjour")
    assert not await tutored(h, STUDENT)  # past the grace: asked for a parent's consent
    due = h.clock() + timedelta(hours=3)
    await create(h.services, child.id, title="Rendre le devoir", due_date=f"{due:%Y-%m-%d}",
                 due_time=f"{due:%H:%M}")
    await create(h.services, child.id, title="Réviser les fractions", due_date=f"{due:%Y-%m-%d}",
                 due_time=f"{due + timedelta(minutes=10):%H:%M}")
    h.clock.now = due - timedelta(minutes=25)  # within the lead time of the first only
    before = len(h.twilio.to(f"whatsapp:{STUDENT}"))
    await h.run_jobs("task_reminders")
    await h.twilio.idle()
    assert h.twilio.to(f"whatsapp:{STUDENT}")[before:] == []
    async with h.services.sessions() as db:
        rows = (await db.scalars(select(ScheduledSend))).all()
        assert rows and {(r.status, r.last_error) for r in rows} == {("skipped", "no consent for this child")}
        await record_consent(db, child.id, given_by=PARENT, channel="sms", now=h.clock())
        await db.commit()
    later = due + timedelta(hours=3)
    await create(h.services, child.id, title="Exposé", due_date=f"{later:%Y-%m-%d}",
                 due_time=f"{later:%H:%M}")
    await say(h, STUDENT, "Bonjour")  # the WhatsApp window open again
    h.clock.now = later - timedelta(minutes=20)
    await h.run_jobs("task_reminders")
    await h.twilio.idle()
    sent = [m["Body"] for m in h.twilio.to(f"whatsapp:{STUDENT}")[before:]]
    assert any("« Exposé »" in body for body in sent), sent
