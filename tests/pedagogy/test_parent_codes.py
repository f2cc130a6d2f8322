"""Parent-link codes: the SMS carries nothing the requester wrote, one code confirms one request,
a bare OUI confirms nothing, wrong codes lock answers for a while, codes expire."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select

from bot.storage.models import ParentLink, User
from handlers.parents import CODE_LOCK, CODE_TTL, MAX_CODE_TRIES, invitation_text, masked_number
from tests.support.pedagogy import (
    MONDAY,
    OTHER,
    PARENT,
    STUDENT,
    code_in,
    confirm,
    latest_code,
    link_status,
    say,
)

HOSTILE = "Envoie ton code à +2250799999999"


async def say_as(h: Any, phone: str, body: str, profile_name: str) -> list[str]:
    """A WhatsApp message whose sender's display name (ProfileName) is `profile_name`."""
    before = len(await h.texts_to(phone))
    status, _ = await h.inbound(phone, body, extra={"ProfileName": profile_name})
    assert status == 200
    await h.settle()
    return (await h.texts_to(phone))[before:]


async def request(h: Any, student: str = STUDENT, parent: str = PARENT) -> str:
    """`student` asks to add `parent`; returns the code of the SMS the parent received."""
    await say(h, student, f"PARENT {parent}")
    return await latest_code(h, parent)


def wrong(code: str, i: int) -> str:
    return f"{(int(code) + i) % 10000:04d}"


def test_masked_number_keeps_the_country_code_and_last_digits() -> None:
    assert masked_number("+2250701020304") == "+225xxxxxx0304"
    assert masked_number("+33612345678") == "+33xxxxx5678"
    assert masked_number(None) is None and masked_number("") is None and masked_number("not a number") is None


async def test_the_sms_carries_nothing_the_requester_wrote(harness: Any) -> None:
    h = harness
    h.clock.now = MONDAY
    await h.make_user(STUDENT, mode="child")
    [reply] = await say_as(h, STUDENT, f"PARENT {PARENT}", HOSTILE)
    assert "J'ai envoyé un SMS" in reply
    student = await h.user(STUDENT)
    assert student is not None and student.display_name == HOSTILE  # the name really is the hostile one
    [sms] = h.twilio.to(PARENT)
    code = code_in(sms["Body"])
    # Exactly the fixed text: the masked number and the code, nothing else.
    assert sms["Body"] == invitation_text(STUDENT, code, "fr")
    # Everything the parent receives before and at confirmation is free of it too.
    await say(h, PARENT, "OUI", channel="sms")
    await confirm(h)
    for body in await h.texts_to(PARENT):
        assert "Envoie" not in body and "code à" not in body
        assert "0799999999" not in body and "2250700000001" not in body
    assert await link_status(h) == "confirmed"


async def test_invitation_in_english_has_the_same_fixed_shape(harness: Any) -> None:
    h = harness
    h.clock.now = MONDAY
    await h.make_user(STUDENT, mode="child", language="en", display_name=HOSTILE)
    code = await request(h)
    [body] = await h.texts_to(PARENT)
    assert body == invitation_text(STUDENT, code, "en")
    assert f"YES {code}" in body and f"NO {code}" in body and "Envoie" not in body


async def test_a_bare_oui_confirms_nothing_and_gives_the_code(harness: Any) -> None:
    h = harness
    h.clock.now = MONDAY
    await h.make_user(STUDENT, mode="child")
    code = await request(h)
    [answer] = await say(h, PARENT, "oui", channel="sms")
    assert f"OUI {code}" in answer and f"NON {code}" in answer and "+225xxxxxx0001" in answer
    assert await link_status(h) == "pending"
    assert not any("confirmé" in t for t in await h.texts_to(STUDENT))
    [done] = await say(h, PARENT, f"Oui, {code}", channel="sms")
    assert "ENFANTS" in done and await link_status(h) == "confirmed"


async def test_two_requests_one_code_confirms_only_its_own(harness: Any) -> None:
    h = harness
    h.clock.now = MONDAY
    await h.make_user(STUDENT, mode="child", display_name="Awa")
    await h.make_user(OTHER, mode="child", display_name="Koffi")
    first = await request(h, STUDENT)
    second = await request(h, OTHER)
    assert first != second  # one code names one request
    # A bare OUI confirms neither; the answer lists both codes.
    [answer] = await say(h, PARENT, "OUI", channel="sms")
    assert f"OUI {first}" in answer and f"OUI {second}" in answer and "2 demandes" in answer
    assert await link_status(h, STUDENT) == "pending" and await link_status(h, OTHER) == "pending"
    # The second code confirms the second request only.
    await say(h, PARENT, f"OUI {second}", channel="sms")
    assert await link_status(h, OTHER) == "confirmed" and await link_status(h, STUDENT) == "pending"
    assert any("confirmé" in t for t in await h.texts_to(OTHER))
    assert not any("confirmé" in t for t in await h.texts_to(STUDENT))
    # A used code names nothing any more; NON with the first code refuses the first one only.
    [again] = await say(h, PARENT, f"NON {second}", channel="sms")
    assert "ne correspond" in again and await link_status(h, OTHER) == "confirmed"
    await say(h, PARENT, f"NON {first}", channel="sms")
    assert await link_status(h, STUDENT) == "refused" and await link_status(h, OTHER) == "confirmed"
    assert any("refusé" in t for t in await h.texts_to(STUDENT))


async def test_wrong_codes_lock_answers_for_a_while(harness: Any) -> None:
    h = harness
    h.clock.now = MONDAY
    await h.make_user(STUDENT, mode="child")
    code = await request(h)
    [short] = await say(h, PARENT, "OUI 12", channel="sms")  # not even the right length
    assert "ne correspond" in short and f"{MAX_CODE_TRIES - 1} essais" in short
    for i in range(1, MAX_CODE_TRIES - 1):
        [reply] = await say(h, PARENT, f"OUI {wrong(code, i)}", channel="sms")
        assert "ne correspond" in reply
    [locked] = await say(h, PARENT, f"OUI {wrong(code, 99)}", channel="sms")
    assert "Trop d'essais" in locked
    # Locked: even the right code is refused, and so is a bare OUI (no codes handed out).
    [refused] = await say(h, PARENT, f"OUI {code}", channel="sms")
    assert "Trop de codes erronés" in refused and code not in refused
    assert await link_status(h) == "pending"
    parent = await h.user(PARENT)
    assert parent is not None and parent.parent_code_locked_until == MONDAY + CODE_LOCK
    # After the lock, the right code works and the count starts again.
    h.clock.now = MONDAY + CODE_LOCK + timedelta(seconds=1)
    [done] = await say(h, PARENT, f"OUI {code}", channel="sms")
    assert "ENFANTS" in done and await link_status(h) == "confirmed"
    parent = await h.user(PARENT)
    assert parent is not None and parent.parent_code_failures == 0


async def test_an_expired_code_confirms_nothing_and_a_new_one_is_given(harness: Any) -> None:
    h = harness
    h.clock.now = MONDAY
    await h.make_user(STUDENT, mode="child")
    code = await request(h)
    h.clock.now = MONDAY + CODE_TTL + timedelta(minutes=1)
    [expired] = await say(h, PARENT, f"OUI {code}", channel="sms")
    assert "expiré" in expired and await link_status(h) == "pending"
    parent = await h.user(PARENT)
    assert parent is not None and parent.parent_code_failures == 0  # not a guess
    [answer] = await say(h, PARENT, "OUI", channel="sms")
    fresh = code_in(answer)
    async with h.services.sessions() as db:
        link = await db.scalar(select(ParentLink).where(ParentLink.parent_id == parent.id))
        assert link is not None and link.code == fresh and link.code_expires_at == h.clock() + CODE_TTL
    [done] = await say(h, PARENT, f"OUI {fresh}", channel="sms")
    assert "ENFANTS" in done and await link_status(h) == "confirmed"


async def test_asking_again_after_the_code_expired_sends_a_new_code(harness: Any) -> None:
    h = harness
    h.clock.now = MONDAY
    await h.make_user(STUDENT, mode="child")
    await request(h)
    [waiting] = await say(h, STUDENT, f"PARENT {PARENT}")
    assert "déjà en attente" in waiting and len(h.twilio.to(PARENT)) == 1
    h.clock.now = MONDAY + CODE_TTL + timedelta(hours=1)
    [sent] = await say(h, STUDENT, f"PARENT {PARENT}")
    assert "J'ai envoyé un SMS" in sent and len(h.twilio.to(PARENT)) == 2
    await confirm(h)
    assert await link_status(h) == "confirmed"


async def test_codes_of_one_parent_differ_and_others_cannot_use_them(harness: Any) -> None:
    h = harness
    h.clock.now = MONDAY
    students = ["+2250700000011", "+2250700000012", "+2250700000013"]
    codes = []
    for phone in students:
        await h.make_user(phone, mode="child")
        codes.append(await request(h, phone))
    assert len(set(codes)) == 3
    # Someone else answering with a parent's code confirms nothing: the code is the parent's.
    await h.make_user(OTHER, mode="child")
    h.llm.push_text("Oui ?")
    await say(h, OTHER, f"OUI {codes[0]}")
    async with h.services.sessions() as db:
        statuses = set(await db.scalars(select(ParentLink.status)))
        parent = await db.scalar(select(User).where(User.phone == PARENT))
    assert statuses == {"pending"} and parent is not None
