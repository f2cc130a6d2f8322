"""SUPPRIMER / DELETE from the chat, through the real webhook, pipeline and handler chain."""

from __future__ import annotations

from sqlalchemy import func, select

from bot.storage.models import InboundMessage, ParentLink, UserFile
from tests.support.accounts import PARENT, PHONE, leftovers, rich_user, say
from tests.support.harness import Harness
from tests.support.pedagogy import confirm


async def test_supprimer_then_oui_erases_everything_and_says_so(harness: Harness) -> None:
    h = harness
    user = await rich_user(h)
    async with h.services.sessions() as db:
        keys = list(await db.scalars(select(UserFile.storage_key).where(UserFile.user_id == user.id)))
    *_waiting_file, ask = await say(h, PHONE, "Supprimer")  # a file kept for later goes out first
    assert "effacement de tout ce que Deblo garde de ce compte" in ask and "OUI" in ask and "5 minutes" in ask
    assert await h.user(PHONE) is not None  # nothing happens before the confirmation
    [done] = await say(h, PHONE, "oui")
    assert "C'est fait" in done and "effacé" in done
    assert await h.user(PHONE) is None
    assert await leftovers(h, user.id, PHONE) == []
    assert keys and not any(h.stored_path(k).exists() for k in keys)
    async with h.services.sessions() as db:
        # The parent's own account stays, without the link.
        assert await h.user(PARENT) is not None
        assert await db.scalar(select(func.count()).select_from(ParentLink)) == 0
    # Writing again starts afresh, as a new user.
    replies = await say(h, PHONE, "Bonjour")
    assert any("Bienvenue sur Deblo" in r for r in replies), replies
    again = await h.user(PHONE)
    assert again is not None and again.id != user.id


async def test_delete_in_english(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, language="en")
    [ask] = await say(h, PHONE, "DELETE")
    assert "erase everything Deblo keeps about you" in ask and "YES" in ask
    [done] = await say(h, PHONE, "Yes")
    assert done.startswith("Done: everything Deblo kept about you is erased")
    assert await h.user(PHONE) is None and await leftovers(h, user.id, PHONE) == []


async def test_anything_else_cancels(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    await say(h, PHONE, "SUPPRIMER")
    assert await say(h, PHONE, "non") == ["Suppression annulée : les données sont conservées."]
    # No request pending any more: OUI is an ordinary message.
    h.llm.push_text("Oui à quoi ?")
    assert await say(h, PHONE, "OUI") == ["Oui à quoi ?"]
    await say(h, PHONE, "SUPPRIMER")
    h.llm.push_text("2 + 2 = 4")
    # Another message cancels, and is still answered.
    assert await say(h, PHONE, "Combien font 2 + 2 ?") == [
        "Suppression annulée : les données sont conservées.", "2 + 2 = 4"]
    assert await h.user(PHONE) is not None
    async with h.services.sessions() as db:
        assert await db.scalar(select(func.count()).select_from(InboundMessage)) == 5


async def test_the_request_expires_after_a_few_minutes(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    await say(h, PHONE, "SUPPRIMER")
    h.clock.advance(minutes=6)
    h.llm.push_text("Oui ?")
    assert await say(h, PHONE, "OUI") == ["Oui ?"]
    assert await h.user(PHONE) is not None


async def test_oui_still_confirms_a_parent_link_without_a_deletion_request(harness: Harness) -> None:
    h = harness
    student = await h.make_user(PHONE)
    await say(h, PHONE, f"PARENT {PARENT}")
    await confirm(h, PARENT)
    parent = await h.user(PARENT)
    assert parent is not None
    async with h.services.sessions() as db:
        link = await db.scalar(select(ParentLink).where(ParentLink.student_id == student.id))
    assert link is not None and link.status == "confirmed"
    # A parent's own deletion request takes their next OUI, not the link's.
    await say(h, PARENT, "SUPPRIMER", channel="sms")
    [done] = await say(h, PARENT, "OUI", channel="sms")
    assert "C'est fait" in done
    assert await h.user(PARENT) is None and await h.user(PHONE) is not None
    assert await leftovers(h, parent.id, PARENT) == []
