"""A number that confirmed a PARENT link is a parent: MENU / AIDE list ENFANTS and no profile
choice, PROGRES points to ENFANTS, and the profile menu is never offered again."""

from __future__ import annotations

from typing import Any

from tests.support.pedagogy import MONDAY, PARENT, STUDENT, confirm, link_status, say


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
    h.llm.push_text("Bonjour ! Que puis-je faire pour vous ?")
    [answer] = await say(h, PARENT, "Bonjour", channel="sms")
    assert answer == "Bonjour ! Que puis-je faire pour vous ?"
    [menu] = await say(h, PARENT, "MENU", channel="sms")
    assert "ENFANTS" in menu and "Profil" not in menu
