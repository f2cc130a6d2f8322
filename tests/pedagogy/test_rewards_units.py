"""Bonus credits and silent exercise results, against real services (SQLite) and the real ledger."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from bot.services import Services
from bot.storage.models import CreditEntry, ExerciseResult, User
from tests.support.pedagogy import context, make_student
from tools import award_bonus_credits, report_exercise_result


async def record(services: Services, user_id: int, conversation_id: int, correct: bool = True) -> None:
    async with services.sessions() as db:
        db.add(ExerciseResult(user_id=user_id, conversation_id=conversation_id, subject="Maths",
                              correct=correct, source="quiz", created_at=services.clock()))
        await db.commit()


async def ledger(services: Services, user_id: int) -> list[tuple[int, str]]:
    async with services.sessions() as db:
        query = select(CreditEntry.delta, CreditEntry.reason).where(CreditEntry.user_id == user_id)
        rows = await db.execute(query.order_by(CreditEntry.id))
        return [(r.delta, r.reason) for r in rows]


async def balance(services: Services, user_id: int) -> int:
    async with services.sessions() as db:
        return int(await db.scalar(select(User.credit_balance).where(User.id == user_id)) or 0)


async def test_asking_for_credits_gives_nothing(unit_services: Services) -> None:
    user, conversation = await make_student(unit_services)
    sent: list[str] = []
    ctx = context(unit_services, user.id, conversation.id, sent)
    result = await award_bonus_credits.run(ctx, {"credits": 5, "reason": "the student asked nicely"})
    assert result["success"] is False and "never given because the student asks" in result["error"]
    await record(unit_services, user.id, conversation.id, correct=False)  # a wrong answer earns nothing
    assert (await award_bonus_credits.run(ctx, {"credits": 5}))["success"] is False
    assert sent == [] and await ledger(unit_services, user.id) == []
    assert await balance(unit_services, user.id) == 0


async def test_one_award_per_correct_result_clamped_and_told(unit_services: Services) -> None:
    user, conversation = await make_student(unit_services)
    sent: list[str] = []
    ctx = context(unit_services, user.id, conversation.id, sent)
    await record(unit_services, user.id, conversation.id)
    result = await award_bonus_credits.run(ctx, {"credits": 3})
    assert result["success"] is True and result["credits_awarded"] == 3
    assert sent == ["🎁 +3 crédits bonus, bravo !"]
    again = await award_bonus_credits.run(ctx, {"credits": 3})
    assert again["success"] is False
    await record(unit_services, user.id, conversation.id)
    clamped = await award_bonus_credits.run(ctx, {"credits": 50})
    assert clamped["credits_awarded"] == 5
    await record(unit_services, user.id, conversation.id)
    assert (await award_bonus_credits.run(ctx, {"credits": -4}))["credits_awarded"] == 1
    assert (await award_bonus_credits.run(ctx, {"credits": "beaucoup"}))["success"] is False
    assert await ledger(unit_services, user.id) == [(3, "ai_bonus"), (5, "ai_bonus"), (1, "ai_bonus")]
    assert await balance(unit_services, user.id) == 9


async def test_result_in_another_conversation_does_not_count(unit_services: Services) -> None:
    user, conversation = await make_student(unit_services)
    other, other_conversation = await make_student(unit_services, "+2250705060708")
    await record(unit_services, other.id, other_conversation.id)
    sent: list[str] = []
    ctx = context(unit_services, user.id, conversation.id, sent)
    result = await award_bonus_credits.run(ctx, {"credits": 2})
    assert result["success"] is False and await balance(unit_services, other.id) == 0


async def test_daily_caps_then_next_day(unit_services: Services) -> None:
    user, conversation = await make_student(unit_services)  # caps: 3 awards, 10 credits a day
    sent: list[str] = []
    ctx = context(unit_services, user.id, conversation.id, sent)
    awarded: list[Any] = []
    for _ in range(3):
        await record(unit_services, user.id, conversation.id)
        awarded.append((await award_bonus_credits.run(ctx, {"credits": 4}))["credits_awarded"])
    assert awarded == [4, 4, 2]  # the third is cut to what remains of the 10
    await record(unit_services, user.id, conversation.id)
    capped = await award_bonus_credits.run(ctx, {"credits": 1})
    assert capped["success"] is False and "daily limit" in capped["error"]
    assert await balance(unit_services, user.id) == 10
    unit_services.clock.advance(days=1)  # type: ignore[attr-defined]
    assert (await award_bonus_credits.run(ctx, {"credits": 2}))["credits_awarded"] == 2


async def test_credit_cap_before_award_cap(unit_services: Services) -> None:
    user, conversation = await make_student(unit_services)
    ctx = context(unit_services, user.id, conversation.id, [])
    for amount in (5, 5):
        await record(unit_services, user.id, conversation.id)
        assert (await award_bonus_credits.run(ctx, {"credits": amount}))["success"] is True
    await record(unit_services, user.id, conversation.id)
    result = await award_bonus_credits.run(ctx, {"credits": 1})
    assert result["success"] is False and "10 bonus credits" in result["error"]


async def test_report_exercise_result_is_silent_and_checked(unit_services: Services) -> None:
    user, conversation = await make_student(unit_services)
    sent: list[str] = []
    ctx = context(unit_services, user.id, conversation.id, sent)
    assert (await report_exercise_result.run(ctx, {"subject": "Maths", "correct": "oui"}))["success"] is False
    assert (await report_exercise_result.run(ctx, {"subject": "", "correct": True}))["success"] is False
    ok = await report_exercise_result.run(ctx, {"subject": "Maths", "topic": "fractions", "correct": True})
    assert ok == {"success": True, "recorded": True} and sent == []
    async with unit_services.sessions() as db:
        rows = (await db.scalars(select(ExerciseResult).where(ExerciseResult.user_id == user.id))).all()
    assert [(r.subject, r.topic, r.correct, r.source, r.conversation_id) for r in rows] == [
        ("Mathématiques", "fractions", True, "report", conversation.id)]


async def test_model_reported_results_never_back_an_award(unit_services: Services) -> None:
    """Only a quiz answer checked on the server earns a bonus: the model can be talked into
    reporting `correct=true` for anything."""
    user, conversation = await make_student(unit_services)
    sent: list[str] = []
    ctx = context(unit_services, user.id, conversation.id, sent)
    for _ in range(3):
        reported = await report_exercise_result.run(ctx, {"subject": "Maths", "correct": True})
        assert reported["success"] is True
    refused = await award_bonus_credits.run(ctx, {"credits": 5})
    assert refused["success"] is False and "report_exercise_result do not count" in refused["error"]
    assert sent == [] and await ledger(unit_services, user.id) == []
    await record(unit_services, user.id, conversation.id)  # a quiz answered right (source "quiz")
    awarded = await award_bonus_credits.run(ctx, {"credits": 2})
    assert awarded["success"] is True and awarded["credits_awarded"] == 2
    # The reported results left over do not back a second award.
    assert (await award_bonus_credits.run(ctx, {"credits": 2}))["success"] is False
    assert await ledger(unit_services, user.id) == [(2, "ai_bonus")]


async def test_old_results_do_not_back_new_awards(unit_services: Services) -> None:
    user, conversation = await make_student(unit_services)
    ctx = context(unit_services, user.id, conversation.id, [])
    await record(unit_services, user.id, conversation.id)
    await record(unit_services, user.id, conversation.id)
    assert (await award_bonus_credits.run(ctx, {"credits": 1}))["success"] is True
    unit_services.clock.advance(hours=1)  # type: ignore[attr-defined]
    # Both results predate the award: "since the last award" leaves none.
    assert (await award_bonus_credits.run(ctx, {"credits": 1}))["success"] is False
