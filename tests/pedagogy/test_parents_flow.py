"""Parents end to end: PARENT +…, the confirmation SMS, OUI n / NON n / STOP, the weekly summary, ENFANTS."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from bot.channel import formatting
from bot.learning.progress import send_weekly_summaries
from bot.storage.models import ExerciseResult, User
from tests.support.harness import SMS_FROM, WHATSAPP_FROM
from tests.support.pedagogy import (
    MONDAY,
    OTHER,
    PARENT,
    STUDENT,
    SUNDAY_SLOT,
    ask_quiz,
    code_in,
    confirm,
    link_status,
    say,
)


async def add_parent(h: Any) -> list[str]:
    h.clock.now = MONDAY
    await h.make_user(STUDENT, mode="child", display_name="Awa")
    texts = await say(h, STUDENT, f"PARENT {PARENT}")
    assert any(PARENT in t for t in texts)
    return texts


async def test_invitation_said_sent_only_once_twilio_accepted_it(harness: Any) -> None:
    h = harness
    [reply] = await add_parent(h)
    [invitation] = h.twilio.to(PARENT)
    assert invitation["From"] == SMS_FROM and "OUI" in invitation["Body"]
    assert "J'ai envoyé un SMS" in reply


async def test_no_sms_sender_says_nothing_was_sent_and_how_to_confirm(make_harness: Any) -> None:
    h = await make_harness(TWILIO_SMS_FROM="")  # a WhatsApp-only set-up
    [reply] = await add_parent(h)
    assert h.twilio.to(PARENT) == []
    assert "envoyé un SMS" not in reply and "n'envoie pas de SMS" in reply
    assert f"OUI au {WHATSAPP_FROM.removeprefix('whatsapp:')} (WhatsApp)" in reply and PARENT in reply
    assert await link_status(h) == "pending"
    # What the student was told works: the parent writes OUI to the bot's WhatsApp number, gets the
    # code there (nothing is confirmed by a bare OUI), and answers with it.
    [ask] = await say(h, PARENT, "OUI")
    assert f"OUI {code_in(ask)}" in ask and await link_status(h) == "pending"
    replies = await confirm(h, channel="whatsapp")
    assert any("ENFANTS" in t for t in replies)
    assert await link_status(h) == "confirmed"
    assert any("confirmé" in t for t in await h.texts_to(STUDENT))


async def test_refused_invitation_is_said_and_can_be_sent_again(harness: Any) -> None:
    h = harness
    h.clock.now = MONDAY
    await h.make_user(STUDENT, mode="child", display_name="Awa")
    h.twilio.fail_next("400")
    [reply] = await say(h, STUDENT, f"PARENT {PARENT}")
    assert h.twilio.to(PARENT) == []
    assert "n'a pas pu partir" in reply and "envoyé un SMS" not in reply
    assert f"{SMS_FROM} (SMS)" in reply and f"renvoyer PARENT {PARENT}" in reply
    [again] = await say(h, STUDENT, f"PARENT {PARENT}")
    assert "J'ai envoyé un SMS" in again and len(h.twilio.to(PARENT)) == 1
    [third] = await say(h, STUDENT, f"PARENT {PARENT}")
    assert "déjà en attente" in third and len(h.twilio.to(PARENT)) == 1


async def test_invitation_in_english_when_not_sent(make_harness: Any) -> None:
    h = await make_harness(TWILIO_SMS_FROM="")
    h.clock.now = MONDAY
    await h.make_user(STUDENT, mode="child", language="en")
    [reply] = await say(h, STUDENT, f"PARENT {PARENT}")
    assert "this service does not send SMS" in reply and "write YES" in reply
    assert h.twilio.to(PARENT) == []


async def test_link_confirm_and_weekly_summary(harness: Any) -> None:
    h = harness
    await add_parent(h)
    [ask] = await h.texts_to(PARENT)
    code = code_in(ask)
    assert "Awa" not in ask and "+225xxxxxx0001" in ask and f"OUI {code}" in ask and f"NON {code}" in ask
    assert await link_status(h) == "pending"
    # Unconfirmed: nothing more reaches the parent, not even at summary time.
    h.clock.now = SUNDAY_SLOT + timedelta(minutes=5)
    assert await send_weekly_summaries(h.services, h.clock()) == 0
    assert len(await h.texts_to(PARENT)) == 1

    h.clock.now = MONDAY + timedelta(hours=1)
    replies = await confirm(h)
    assert any("ENFANTS" in t for t in replies)
    assert await link_status(h) == "confirmed"
    assert any("confirmé" in t for t in await h.texts_to(STUDENT))

    # Some work during the week: one quiz right.
    await ask_quiz(h)
    await say(h, STUDENT, "2")

    h.clock.now = SUNDAY_SLOT - timedelta(minutes=1)
    assert await send_weekly_summaries(h.services, h.clock()) == 0  # not yet time
    h.clock.now = SUNDAY_SLOT + timedelta(minutes=5)
    # Two workers running the job at once: one summary.
    sent = await asyncio.gather(*(send_weekly_summaries(h.services, h.clock()) for _ in range(3)))
    assert sum(sent) == 1
    summary = (await h.texts_to(PARENT))[-1]
    assert "Awa a répondu à 1 question, 100 % justes" in summary
    assert "Maths 1/1" in summary
    # How to stop them, in the fewest characters the rules need: a usual week of one child is one
    # SMS segment.
    assert summary.endswith(("STOP pour arrêter", "STOP pour arreter")), summary
    assert formatting.sms_cost(summary) == 1, (len(summary), summary)
    h.clock.now = SUNDAY_SLOT + timedelta(hours=3)
    assert await send_weekly_summaries(h.services, h.clock()) == 0  # once a week
    # The following week, through the registered scheduler job.
    h.clock.now = SUNDAY_SLOT + timedelta(days=7, minutes=1)
    count = len(await h.texts_to(PARENT))
    await h.run_jobs("parent_weekly_summary")
    await h.run_jobs("parent_weekly_summary")
    texts = await h.texts_to(PARENT)
    assert len(texts) == count + 1 and "aucun exercice" in texts[-1]


async def test_refusal_is_final(harness: Any) -> None:
    h = harness
    await add_parent(h)
    await confirm(h, word="non")
    assert await link_status(h) == "refused"
    sent_to_parent = len(await h.texts_to(PARENT))
    texts = await say(h, STUDENT, f"PARENT {PARENT}")
    assert any("refusé" in t for t in texts)
    h.clock.now = SUNDAY_SLOT + timedelta(minutes=5)
    assert await send_weekly_summaries(h.services, h.clock()) == 0
    assert len(await h.texts_to(PARENT)) == sent_to_parent


async def test_stop_ends_the_summaries(harness: Any) -> None:
    h = harness
    await add_parent(h)
    await confirm(h)
    await say(h, PARENT, "STOP", channel="sms")
    count = len(await h.texts_to(PARENT))
    h.clock.now = SUNDAY_SLOT + timedelta(minutes=5)
    assert await send_weekly_summaries(h.services, h.clock()) == 0
    assert len(await h.texts_to(PARENT)) == count
    # Another student asking to add a parent who said STOP sends nothing either.
    await h.make_user(OTHER, mode="child")
    texts = await say(h, OTHER, f"PARENT {PARENT}")
    assert any("ne plus recevoir" in t for t in texts)
    assert len(await h.texts_to(PARENT)) == count
    # START, as the summary says, brings them back from the next week on.
    await say(h, PARENT, "START", channel="sms")
    count = len(await h.texts_to(PARENT))
    h.clock.now = SUNDAY_SLOT + timedelta(days=7, minutes=5)
    assert await send_weekly_summaries(h.services, h.clock()) == 1
    assert len(await h.texts_to(PARENT)) == count + 1


async def test_a_failed_summary_is_retried_and_sent_once(make_harness: Any) -> None:
    h = await make_harness(TWILIO_SEND_ATTEMPTS="1", SCHEDULED_SEND_BACKOFF_S="60")
    await add_parent(h)
    await confirm(h)
    count = len(await h.texts_to(PARENT))
    h.clock.now = SUNDAY_SLOT + timedelta(minutes=5)
    h.twilio.fail_next("429")
    assert await send_weekly_summaries(h.services, h.clock()) == 0
    h.clock.now += timedelta(minutes=1)
    assert await send_weekly_summaries(h.services, h.clock()) == 1
    h.clock.now += timedelta(hours=1)
    assert await send_weekly_summaries(h.services, h.clock()) == 0
    texts = await h.texts_to(PARENT)
    assert len(texts) == count + 1 and "aucun exercice" in texts[-1]


async def test_bad_numbers_and_limits(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    assert any("pas valide" in t for t in await say(h, STUDENT, "PARENT 123"))
    assert any("propre numéro" in t for t in await say(h, STUDENT, f"PARENT {STUDENT}"))
    assert any("PARENT suivi" in t for t in await say(h, STUDENT, "PARENT"))
    numbers = [f"+225070000001{i}" for i in range(4)]
    for number in numbers:
        await say(h, STUDENT, f"parent {number}")
    # Three requests may wait at a time: the fourth number gets no SMS.
    assert [len(await h.texts_to(n)) for n in numbers] == [1, 1, 1, 0]
    texts = "\n".join(str(m.get("Body", "")) for m in h.twilio.sent)
    assert "pas valide" in texts  # the student was told, in French


async def test_progress_and_children_views(harness: Any) -> None:
    h = harness
    await add_parent(h)
    await h.make_user(OTHER, mode="child", display_name="Koffi")
    async with h.services.sessions() as db:
        student = await db.scalar(select(User).where(User.phone == STUDENT))
        db.add(ExerciseResult(user_id=student.id, subject="Maths", correct=True, created_at=h.clock()))
        db.add(ExerciseResult(user_id=student.id, subject="Maths", correct=False, created_at=h.clock()))
        await db.commit()
    calls = len(h.llm.requests)
    own = await say(h, STUDENT, "PROGRES")
    assert "Maths" in own[0] and "2 questions, 50 %" in own[0]
    other = await say(h, OTHER, "progrès")
    assert "Maths" not in other[0] and "Pas encore" in other[0]
    # Before confirming, the parent sees nothing.
    pending = await say(h, PARENT, "ENFANTS", channel="sms")
    assert "Awa" not in pending[0] and "Aucun enfant" in pending[0]
    await confirm(h)
    children = await say(h, PARENT, "ENFANTS", channel="sms")
    assert "Awa" in children[0] and "Maths" in children[0] and "Koffi" not in children[0]
    stranger = await say(h, OTHER, "ENFANTS")
    assert "Awa" not in stranger[0]
    assert len(h.llm.requests) == calls  # all answered without the model


async def test_parent_during_onboarding_is_the_profile_choice(harness: Any) -> None:
    h = harness
    await h.make_user(OTHER, mode="guest", onboarding_step="profile")
    await say(h, OTHER, "Parent")
    user = await h.user(OTHER)
    assert user is not None and user.role == "parent" and user.onboarding_step is None
    assert not any("PARENT suivi" in t for t in await h.texts_to(OTHER))


async def test_a_new_parent_is_not_welcomed_again_after_confirming(harness: Any) -> None:
    """The reply to OUI was the parent's welcome: the next message is answered, not greeted."""
    h = harness
    await add_parent(h)
    await confirm(h)
    parent = await h.user(PARENT)
    assert parent is not None and parent.onboarding_step is None
    assert (parent.role, parent.mode) == ("parent", "child")
    h.llm.push_text("Bonjour ! Comment puis-je vous aider ?")
    replies = await say(h, PARENT, "Bonjour", channel="sms")
    assert replies == ["Bonjour ! Comment puis-je vous aider ?"]  # no welcome, no « 1 Élève »


async def test_the_weekly_summary_goes_at_18_00_of_the_parent_s_own_zone(harness: Any) -> None:
    """A parent in Antananarivo (UTC+3) gets it at their 18:00, 15:00 UTC, not at the server's."""
    h = harness
    await add_parent(h)
    await confirm(h)
    async with h.services.sessions() as db:
        parent = await db.scalar(select(User).where(User.phone == PARENT))
        assert parent is not None
        parent.timezone = "Indian/Antananarivo"
        await db.commit()
    h.clock.now = SUNDAY_SLOT - timedelta(hours=3, minutes=5)  # 17:55 in Antananarivo
    assert await send_weekly_summaries(h.services, h.clock()) == 0
    h.clock.now = SUNDAY_SLOT - timedelta(hours=3) + timedelta(minutes=5)  # 18:05 there, 15:05 UTC
    assert await send_weekly_summaries(h.services, h.clock()) == 1
    h.clock.now = SUNDAY_SLOT + timedelta(minutes=5)  # the server's 18:00: nothing more
    assert await send_weekly_summaries(h.services, h.clock()) == 0
