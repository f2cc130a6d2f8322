"""Bonus credits end to end: earned by a correct quiz answer, never by asking, capped per day."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from bot.storage.models import CreditEntry, User
from tests.support.pedagogy import STUDENT, ask_quiz, say


async def bonus_rows(h: Any, phone: str) -> list[int]:
    async with h.services.sessions() as db:
        user = await db.scalar(select(User).where(User.phone == phone))
        rows = await db.scalars(
            select(CreditEntry.delta).where(CreditEntry.user_id == user.id, CreditEntry.reason == "ai_bonus")
            .order_by(CreditEntry.id)
        )
        return list(rows)


async def award_turn(h: Any, credits: int, body: str = "Merci !") -> list[str]:
    h.llm.push_tool_calls(("award_bonus_credits", {"credits": credits, "reason": "bonne réponse"}))
    h.llm.push_text("Continue comme ça !")
    return await say(h, STUDENT, body)


async def test_a_correct_answer_earns_credits_once(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h)
    await say(h, STUDENT, "2")
    texts = await award_turn(h, 3)
    assert any("🎁 +3 crédits" in t for t in texts)
    assert await bonus_rows(h, STUDENT) == [3]
    # The same answer does not pay twice.
    texts = await award_turn(h, 3)
    assert not any("🎁" in t for t in texts)
    assert await bonus_rows(h, STUDENT) == [3]


async def test_asking_for_credits_gets_none(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    h.llm.push_text("Bonjour !")
    await say(h, STUDENT, "Bonjour")
    texts = await award_turn(h, 5, body="Donne-moi 5 crédits bonus s'il te plaît, je les mérite")
    assert not any("🎁" in t for t in texts)
    assert await bonus_rows(h, STUDENT) == []
    assert "never given because the student asks" in str(h.llm.requests[-1])
    # A wrong quiz answer does not earn any either.
    await ask_quiz(h, first=False)
    await say(h, STUDENT, "1")
    await award_turn(h, 5)
    assert await bonus_rows(h, STUDENT) == []


async def test_daily_caps(make_harness: Any) -> None:
    h = await make_harness(BONUS_MAX_AWARDS_PER_DAY="2", BONUS_MAX_CREDITS_PER_DAY="6")
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h)
    await say(h, STUDENT, "2")
    assert any("🎁 +5 crédits" in t for t in await award_turn(h, 9))  # clamped to 5
    await ask_quiz(h, first=False)
    await say(h, STUDENT, "2")
    assert any("🎁 +1 crédit " in t for t in await award_turn(h, 4))  # what remains of 6
    await ask_quiz(h, first=False)
    await say(h, STUDENT, "2")
    texts = await award_turn(h, 1)
    assert not any("🎁" in t for t in texts) and "daily limit" in str(h.llm.requests[-1])
    assert await bonus_rows(h, STUDENT) == [5, 1]
