"""After a child's distress the bot is gentle that day: no review offer, no quiz, no nudge, no credit
notice; the model is told that the helpline was given and an adult told (handlers/safety.py,
bot.safety.gentle). Through the real webhook, pipeline, FakeTwilio and FakeLLM."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from bot.billing import credits
from bot.learning import send_review_nudges
from bot.storage.models import SafetyFlag, ScheduledSend, User
from tests.support.learner import add_item
from tests.support.pedagogy import STUDENT, say
from tests.support.safety import DISTRESS

NOW = datetime(2026, 3, 5, 10, 0, tzinfo=UTC)  # 10:00 in Abidjan


def tool_names(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or []}


async def test_no_review_offer_nor_quiz_on_the_turn_of_distress_and_the_model_is_told(harness: Any) -> None:
    h = harness
    h.clock.now = NOW
    user = await h.make_user(STUDENT, mode="child")
    for n in range(3):
        await add_item(h.services, user.id, NOW - timedelta(days=1, hours=n))
    h.llm.push_text("Je suis là. On regarde les fractions ensemble ?")
    texts = await say(h, STUDENT, f"{DISTRESS}. Et aide-moi pour les fractions")
    assert len(texts) == 2 and "116" in texts[0]  # the helpline first, then the tutor; no offer
    assert not any("REVISION" in t for t in texts)
    request = h.llm.requests[-1]
    system = request["messages"][0]["content"]
    assert "Note de sécurité" in system and "transmis à un adulte" in system
    offered = tool_names(request)
    assert offered and "interactive_quiz" not in offered and "true_false_quiz" not in offered
    # The next message of the day, a new session's first: still no review offer, quizzes back.
    h.clock.advance(hours=3)
    h.llm.push_text("D'accord.")
    texts = await say(h, STUDENT, "Merci, c'est plus clair")
    assert texts == ["D'accord."]
    assert "interactive_quiz" in tool_names(h.llm.requests[-1])
    assert "Note de sécurité" not in h.llm.requests[-1]["messages"][0]["content"]


async def test_a_child_without_credits_who_says_distress_is_answered_without_a_credit_notice(
        harness: Any) -> None:
    h = harness
    user = await h.make_user(STUDENT, mode="child")
    async with h.services.sessions() as db:
        await credits.apply(db, user.id, -(await credits.balance(db, user.id)), "admin", "spent")
        await db.commit()
        assert await credits.balance(db, user.id) == 0
    h.llm.push_text("Je t'écoute.")
    texts = await say(h, STUDENT, DISTRESS)
    assert len(texts) == 2 and "116" in texts[0] and texts[1] == "Je t'écoute."
    assert not any("crédit" in t for t in texts)


async def test_no_nudge_for_a_day_after_distress_then_again(harness: Any) -> None:
    h = harness
    h.clock.now = NOW - timedelta(hours=5)
    user = await h.make_user(STUDENT, mode="child")
    for n in range(2):
        await add_item(h.services, user.id, NOW - timedelta(days=1, hours=n))
    await say(h, STUDENT, DISTRESS)
    h.clock.now = NOW  # quiet for five hours, items due, window open: a nudge but for the distress
    assert await send_review_nudges(h.services, h.clock()) == 0
    async with h.services.sessions() as db:
        flag = await db.scalar(select(SafetyFlag))
        assert flag is not None
        flag.acknowledged_at = NOW  # a person saw it; the day is still a gentle one
        await db.commit()
    assert await send_review_nudges(h.services, h.clock()) == 0
    async with h.services.sessions() as db:
        assert not list(await db.scalars(select(ScheduledSend)))  # nothing planned, nothing skipped
        # The next day, past a day since the flag: the child wrote at 05:00 and is quiet since.
        row = await db.get(User, user.id)
        assert row is not None
        row.last_inbound_at = row.last_whatsapp_inbound_at = NOW + timedelta(hours=19)
        await db.commit()
    h.clock.now = NOW + timedelta(hours=24)
    assert await send_review_nudges(h.services, h.clock()) == 1
