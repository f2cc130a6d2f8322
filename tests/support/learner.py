"""The learner tests' steps and reads: a student's quiz items made through the learner's own code
(due or missed), learner rows written straight into the database as the quiz and review paths leave
them (results, old free-text subjects too, mastery, items with a due date), and what the database
holds of their results, mastery and items."""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update

from bot.learning import keep_item, schedule
from bot.services import Services
from bot.storage.models import Conversation, ExerciseResult, InboundMessage, QuizItem, SkillMastery, User
from tests.support.pedagogy import STUDENT, say

OPTIONS = ["A", "B", "C", "D"]


async def student_in_conversation(h: Any, phone: str = STUDENT, channel: str = "whatsapp",
                                  **fields: Any) -> tuple[User, int]:
    """A student who already wrote once (the conversation exists); the model's greeting is spent."""
    user = await h.make_user(phone, mode="child", **fields)
    h.llm.push_text("Bonjour ! On révise quoi ?")
    await say(h, phone, "Bonjour", channel)
    async with h.services.sessions() as db:
        conversation = await db.scalar(select(Conversation.id).where(Conversation.user_id == user.id))
    assert conversation is not None
    return user, int(conversation)


async def add_items(h: Any, user_id: int, conversation_id: int, count: int, *, answered_at: datetime,
                    correct: bool = False, subject: str = "Mathématiques", topic: str = "fractions",
                    ) -> list[int]:
    """`count` four-option items (question n°i, the right answer B), each answered once at
    `answered_at` (missed by default), so scheduled by FSRS from then."""
    ids: list[int] = []
    async with h.services.sessions() as db:
        for i in range(count):
            item = await keep_item(
                db, quiz_id=secrets.token_hex(8), quiz_type="mcq", user_id=user_id,
                conversation_id=conversation_id, question=f"Question n°{i + 1} ?", options=tuple(OPTIONS),
                correct_index=1, explanation=f"Explication {i + 1}", subject=subject, topic=topic,
                now=answered_at - timedelta(minutes=count - i),
            )
            schedule(item, correct, answered_at - timedelta(minutes=count - i))
            ids.append(item.id)
        await db.commit()
    return ids


async def results_of(h: Any, user_id: int) -> list[ExerciseResult]:
    async with h.services.sessions() as db:
        return list(await db.scalars(select(ExerciseResult).where(ExerciseResult.user_id == user_id)
                                     .order_by(ExerciseResult.id)))


async def mastery_of(h: Any, user_id: int) -> list[SkillMastery]:
    async with h.services.sessions() as db:
        return list(await db.scalars(select(SkillMastery).where(SkillMastery.user_id == user_id)
                                     .order_by(SkillMastery.subject, SkillMastery.skill)))


async def items_of(h: Any, user_id: int) -> list[QuizItem]:
    async with h.services.sessions() as db:
        return list(await db.scalars(select(QuizItem).where(QuizItem.user_id == user_id)
                                     .order_by(QuizItem.id)))


async def add_results(services: Services, user_id: int, rows: list[tuple[str, bool]], at: datetime, *,
                      verified: bool = True) -> None:
    """(subject, correct) results at `at`; unverified ones as report_exercise_result stores them."""
    async with services.sessions() as db:
        for subject, correct in rows:
            db.add(ExerciseResult(user_id=user_id, subject=subject, correct=correct, created_at=at,
                                  verified=verified, source="quiz" if verified else "report"))
        await db.commit()


async def add_mastery(services: Services, user_id: int, subject: str, label: str, p_known: float,
                      answers: int, correct: int, at: datetime, skill: str | None = None) -> None:
    async with services.sessions() as db:
        db.add(SkillMastery(user_id=user_id, subject=subject, skill=label.lower() if skill is None else skill,
                            label=label, p_known=p_known, answers=answers, correct=correct, updated_at=at))
        await db.commit()


async def add_item(services: Services, user_id: int, due_at: datetime | None, *,
                   subject: str = "Mathématiques", skill: str = "fraction", last_correct: bool | None = False,
                   **fields: Any) -> int:
    """A quiz item answered once (due at `due_at`), or never answered (`due_at` None)."""
    async with services.sessions() as db:
        item = QuizItem(user_id=user_id, quiz_id=uuid.uuid4().hex[:16], quiz_type="mcq",
                        question="Combien font 1/2 + 1/4 ?", options=["3/4", "2/6", "1/8", "2/4"],
                        correct_index=0, explanation="Même dénominateur.", subject=subject, skill=skill,
                        card={} if due_at else None, due_at=due_at, last_correct=last_correct,
                        last_answered_at=due_at, answers=1 if due_at else 0, **fields)
        db.add(item)
        await db.commit()
        return item.id


async def wrote(h: Any, phone: str, at: datetime) -> None:
    """The user's last message (on WhatsApp) was at `at`: the 24 h window and the quiet time run from it."""
    async with h.services.sessions() as db:
        user = await db.scalar(select(User).where(User.phone == phone))
        assert user is not None
        user.last_inbound_at = user.last_whatsapp_inbound_at = at
        await db.commit()


async def retry_last_inbound(h: Any, user_id: int) -> None:
    """The worker takes the user's last message up again, as after a crash before it was marked done."""
    before = len(h.twilio.sent)
    async with h.services.sessions() as db:
        last = await db.scalar(select(InboundMessage.id).where(InboundMessage.user_id == user_id)
                               .order_by(InboundMessage.id.desc()).limit(1))
        await db.execute(update(InboundMessage).where(InboundMessage.id == last).values(status="pending"))
        await db.commit()
    await h.settle()
    async with h.services.sessions() as db:
        assert await db.scalar(select(InboundMessage.status).where(InboundMessage.id == last)) != "pending"
    assert len(h.twilio.sent) == before  # the same reply is not sent twice either
