"""A number that confirmed a PARENT link, or that a school's class list named as a parent, is a
parent: MENU / AIDE list ENFANTS and no profile choice, PROGRES points to ENFANTS, the profile menu
is never offered again, and when they first write themselves they are not welcomed as new: what
made them a parent (the reply to their OUI, the school's SMS) welcomed them, in « vous »."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from bot.school import enrol_roster, notify_parents, read_roster
from bot.storage.models import Cohort, User
from tests.support.pedagogy import MONDAY, PARENT, STUDENT, confirm, link_status, say
from tests.support.register import tu_marks

NEW_USER_WELCOME = ("Bienvenue sur Deblo", "1 Élève", "Quel profil")


async def linked_parent(h: Any, *, wrote_first: bool) -> None:
    h.clock.now = MONDAY
    if wrote_first:  # the parent wrote to the bot before: welcomed with the profile menu
        [welcome] = await say(h, PARENT, "Bonjour", channel="sms")
        assert "1 Élève" in welcome
    await h.make_user(STUDENT, mode="child", display_name="Awa")
    await say(h, STUDENT, f"PARENT {PARENT}")
    await confirm(h)
    assert await link_status(h) == "confirmed"
    parent = await h.user(PARENT)
    assert parent is not None and (parent.role, parent.mode) == ("parent", "child")


async def test_a_linked_parents_menu_and_help_show_children_and_no_profile(harness: Any) -> None:
    h = harness
    await linked_parent(h, wrote_first=True)
    for word in ("MENU", "AIDE"):
        [text] = await say(h, PARENT, word, channel="sms")
        assert "ENFANTS" in text, word
        assert "Profil" not in text and "1 Élève" not in text, word
    assert h.llm.requests == []


async def test_progres_from_a_parent_points_to_enfants(harness: Any) -> None:
    h = harness
    await linked_parent(h, wrote_first=True)
    [text] = await say(h, PARENT, "PROGRES", channel="sms")
    assert "ENFANTS" in text
    [children] = await say(h, PARENT, "ENFANTS", channel="sms")
    assert "Awa" in children and "Aucun enfant" not in children
    assert h.llm.requests == []


async def test_the_profile_menu_is_not_offered_again(harness: Any) -> None:
    h = harness
    await linked_parent(h, wrote_first=True)
    parent = await h.user(PARENT)
    assert parent is not None and parent.onboarding_step is None
    h.llm.push_text("Bonjour ! Comment puis-je aider votre enfant ?")
    replies = await say(h, PARENT, "Bonjour", channel="sms")
    assert replies and not any("1 Élève" in t or "Profil" in t for t in replies)
    # « 1 » is no longer a profile choice that would turn the parent into a student.
    h.llm.push_text("Que voulez-vous dire par 1 ?")
    await say(h, PARENT, "1", channel="sms")
    parent = await h.user(PARENT)
    assert parent is not None and parent.role == "parent"


async def test_a_parent_who_never_wrote_is_not_welcomed_again(harness: Any) -> None:
    """The reply to their OUI welcomed them: no second welcome, no profile question."""
    h = harness
    await linked_parent(h, wrote_first=False)
    [invitation, thanks] = await h.texts_to(PARENT)  # the student's invitation, the reply to the OUI
    assert "Merci ! Vous suivez maintenant" in thanks and not tu_marks(thanks), thanks
    assert not any(w in t for t in (invitation, thanks) for w in NEW_USER_WELCOME)
    h.llm.push_text("Bonjour ! Que puis-je faire pour vous ?")
    [answer] = await say(h, PARENT, "Bonjour", channel="sms")
    assert answer == "Bonjour ! Que puis-je faire pour vous ?"
    [menu] = await say(h, PARENT, "MENU", channel="sms")
    assert "ENFANTS" in menu and "Profil" not in menu


async def import_class(h: Any, csv: str) -> None:
    """A class list imported as `cohorts import` does it: enrolled in one transaction, then each
    newly linked parent told by SMS."""
    async with h.services.sessions() as db:
        cohort = Cohort(name="6e A", created_at=h.clock())
        db.add(cohort)
        await db.flush()
        report = await enrol_roster(db, h.services, cohort.id, read_roster(csv.encode(), "CI"), h.clock(),
                                    school="Lycée Moderne")
        await db.commit()
    await notify_parents(h.services, report, "Lycée Moderne", "6e A", h.clock())


@pytest.mark.parametrize("wrote_first", [False, True])
async def test_a_parent_named_by_a_class_list_is_not_welcomed_as_new(harness: Any, wrote_first: bool) -> None:
    """The school's SMS told them who linked them and what comes: their first message is answered,
    not greeted with the new number's welcome and profile menu; « 1 » does not make them a student."""
    h = harness
    h.clock.now = MONDAY
    if wrote_first:  # a guest who had been welcomed with the profile menu and never chose
        [welcome] = await say(h, PARENT, "Bonjour", channel="sms")
        assert "1 Élève" in welcome
    await import_class(h, f"phone,name,level,parent_phone\n{STUDENT},Awa Koné,6e,{PARENT}\n")
    parent = await h.user(PARENT)
    assert parent is not None
    assert (parent.role, parent.mode, parent.onboarding_step) == ("parent", "child", None)
    [sms] = (await h.texts_to(PARENT))[-1:]
    assert "Lycée Moderne (classe 6e A)" in sms and not tu_marks(sms), sms
    before = len(await h.texts_to(PARENT))
    h.llm.push_text("Bonjour ! Que puis-je faire pour vous ?")
    assert await say(h, PARENT, "Bonjour", channel="sms") == ["Bonjour ! Que puis-je faire pour vous ?"]
    h.llm.push_text("Que voulez-vous dire par 1 ?")
    await say(h, PARENT, "1", channel="sms")
    [menu] = await say(h, PARENT, "MENU", channel="sms")
    assert "ENFANTS" in menu and "Profil" not in menu and "posez votre question" in menu, menu
    after = (await h.texts_to(PARENT))[before:]
    assert not any(w in t for t in after for w in NEW_USER_WELCOME), after
    async with h.services.sessions() as db:
        parent = await db.scalar(select(User).where(User.phone == PARENT))
    assert parent is not None and parent.role == "parent"
