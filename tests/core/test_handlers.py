"""Opt-out, commands and onboarding, through the real webhook, pipeline and handler chain."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from bot.channel.outbound import send_to_user
from bot.storage.models import Conversation, CreditEntry, InboundMessage
from tests.support.harness import Harness

PHONE = "+2250700000001"


async def say(h: Harness, body: str, channel: str = "whatsapp", **kw: Any) -> list[str]:
    before = len(await h.texts_to(PHONE))
    status, _ = await h.inbound(PHONE, body, channel=channel, **kw)
    assert status == 200
    await h.settle()
    return (await h.texts_to(PHONE))[before:]


async def test_stop_then_nothing_until_start(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    [confirmation] = await say(h, "STOP")
    assert "tu ne recevras plus aucun message" in confirmation and "START" in confirmation
    user = await h.user(PHONE)
    assert user is not None and user.opted_out
    # Nothing of any kind: not an answer, not a reminder sent by a job, not a file.
    assert await say(h, "Bonjour ?") == []
    assert await say(h, "AIDE") == []
    result = await send_to_user(h.services, user, text="Rappel : contrôle demain", kind="reminder")
    assert result.skipped == "opted_out" and not result.sids
    assert len(h.llm.requests) == 0
    [back] = await say(h, "start")
    assert "de nouveau" in back
    h.llm.push_text("Re-bonjour !")
    assert await say(h, "Bonjour") == ["Re-bonjour !"]
    async with h.services.sessions() as db:
        # Messages received while opted out are kept (never lost), just not answered.
        bodies = [r.body for r in (await db.scalars(select(InboundMessage).order_by(InboundMessage.id)))]
    assert bodies == ["STOP", "Bonjour ?", "AIDE", "start", "Bonjour"]


async def test_every_stop_word_works_on_both_channels(harness: Harness) -> None:
    h = harness
    for n, word in enumerate(["ARRET", "Arrêt", "arrêt !", "STOPALL", "unsubscribe", "Stop."]):
        phone = f"+22507000001{n:02d}"
        channel = "sms" if n % 2 else "whatsapp"
        await h.make_user(phone, last_channel=channel)
        await h.inbound(phone, word, channel=channel)
        await h.settle()
        user = await h.user(phone)
        assert user is not None and user.opted_out, word
        assert len(await h.texts_to(phone)) == 1


async def test_a_sentence_containing_stop_is_not_an_opt_out(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    h.llm.push_text("Le mot stop vient de l'anglais.")
    await say(h, "Que veut dire stop ?")
    user = await h.user(PHONE)
    assert user is not None and not user.opted_out


async def test_help_says_what_the_bot_is_and_how_to_stop(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    [text] = await say(h, "AIDE")
    assert "Deblo" in text and "STOP" in text
    await h.make_user("+2250700000002", language="en")
    await h.inbound("+2250700000002", "help")
    await h.settle()
    [english] = await h.texts_to("+2250700000002")
    assert "STOP" in english and "TASKS" in english and "HELP STATUS" in english


async def test_menu_credits_and_language(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE, credit_balance=42)
    [menu] = await say(h, "menu")
    assert "NOUVEAU" in menu and "CREDITS" in menu and "STOP" in menu
    assert await say(h, "Crédits") == ["Tu as 42 crédits."]
    # Alone, the word shows the language and the two choices; it never flips by surprise.
    [shown] = await say(h, "langue")
    assert shown == ("Je te parle en français. Pour l'anglais, écris LANGUE EN ; pour rester en français, "
                     "LANGUE FR.")
    user = await h.user(PHONE)
    assert user is not None and user.language in (None, "fr")
    [switched] = await say(h, "LANGUAGE EN")
    assert switched == "OK, I will speak English with you. Pour revenir au français : LANGUE FR."
    assert await say(h, "credits") == ["You have 42 credits."]
    assert await say(h, "language") == [
        "I speak English with you. For French, send LANGUAGE FR; to stay in English, LANGUAGE EN."]
    assert await say(h, "LANGUE KLINGON") == ["Send LANGUAGE EN or LANGUAGE FR."]
    [back] = await say(h, "LANGUE FR")
    assert back == "D'accord, je te parle en français. To switch back to English: LANGUAGE EN."
    assert await say(h, "credits") == ["Tu as 42 crédits."]
    assert len(h.llm.requests) == 0


async def test_new_starts_a_fresh_conversation(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    h.llm.push_text("Bonjour !")
    await say(h, "Bonjour, je m'appelle Awa")
    [text] = await say(h, "NOUVEAU")
    assert text.startswith("Nouvelle conversation")
    async with h.services.sessions() as db:
        convs = (await db.scalars(select(Conversation).order_by(Conversation.id))).all()
    assert [c.active for c in convs] == [False, True]
    h.llm.push_text("De quoi parlons-nous ?")
    await say(h, "Salut")
    assert "Awa" not in str(h.llm.requests[-1]["messages"])  # the old history is not sent


async def test_onboarding_of_a_new_number(harness: Harness) -> None:
    h = harness
    [welcome] = await say(h, "Bonjour", extra={"ProfileName": "Awa Koné"})
    assert welcome.startswith("Bienvenue sur Deblo, Awa !")
    assert "1 Élève\n2 Parent\n3 Professionnel" in welcome
    user = await h.user(PHONE)
    assert user is not None and user.mode == "guest" and user.onboarding_step == "profile"
    # Before choosing, the user is a guest: other messages go to the agent as guest chat.
    h.llm.push_text("La photosynthèse, c'est…")
    assert await say(h, "C'est quoi la photosynthèse ?") == ["La photosynthèse, c'est…"]
    assert h.llm.requests[-1].get("tools") in (None, [])
    [done] = await say(h, "1")
    assert "C'est parti" in done and f"{h.settings.signup_credits} crédits" in done
    user = await h.user(PHONE)
    assert user is not None
    assert (user.mode, user.role, user.onboarding_step) == ("child", "student", None)
    assert user.credit_balance == h.settings.signup_credits
    # A second "1" is no longer a profile choice (it answers the class menu shown with the
    # confirmation); the credits are given once.
    assert "Tu es en quelle classe" in done
    assert "classe CP1" in (await say(h, "1"))[0]
    async with h.services.sessions() as db:
        entries = (await db.scalars(select(CreditEntry).where(CreditEntry.reason == "signup"))).all()
    assert len(entries) == 1


async def test_parent_and_professional_profiles(harness: Harness) -> None:
    h = harness
    for phone, choice, expected in (("+2250700000011", "2", ("child", "parent")),
                                    ("+2250700000012", "3", ("pro", "pro")),
                                    ("+2250700000013", "Professionnel", ("pro", "pro"))):
        await h.inbound(phone, "Salut", channel="sms")
        await h.settle()
        await h.inbound(phone, choice, channel="sms")
        await h.settle()
        user = await h.user(phone)
        assert user is not None and (user.mode, user.role) == expected
        texts = await h.texts_to(phone)
        assert len(texts) == 2 and texts[0].startswith("Bienvenue sur Deblo !")


async def test_stop_during_onboarding(harness: Harness) -> None:
    h = harness
    [text] = await say(h, "STOP", channel="sms")
    assert "tu ne recevras plus" in text
    user = await h.user(PHONE)
    assert user is not None and user.opted_out and user.onboarding_step == "new"
