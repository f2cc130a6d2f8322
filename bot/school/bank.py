"""A class's bank of questions as its students meet them: a teacher's question becomes, for each
student who is asked it, a quiz item of their own (`QuizItem.class_item_id`), so that FSRS review,
mastery per skill, re-teaching and the heatmap treat it as any quiz the tutor asked. The same
student meets one bank question as one item, however often it is drawn."""

from __future__ import annotations

import secrets
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.learning import keep_item
from bot.storage.models import ClassItem, CohortMember, QuizItem

__all__ = ["bank_items", "student_copy"]


async def student_copy(db: AsyncSession, item: ClassItem, user_id: int, now: datetime,
                       conversation_id: int | None = None) -> QuizItem:
    """The student's own quiz item for a bank question: the one they already have, else a new one
    (no card, no due date until its first answer, as any asked quiz)."""
    mine = await db.scalar(select(QuizItem).where(QuizItem.user_id == user_id,
                                                  QuizItem.class_item_id == item.id))
    if mine is not None:
        return mine
    return await keep_item(
        db, quiz_id=secrets.token_hex(6), quiz_type=item.quiz_type, user_id=user_id,
        conversation_id=conversation_id, question=item.question, options=tuple(item.options),
        correct_index=item.correct_index, explanation=item.explanation, subject=item.subject,
        topic=item.skill_label, now=now, class_item_id=item.id)


async def bank_items(db: AsyncSession, user_id: int, *, subject: str | None = None,
                     skill: str | None = None) -> list[ClassItem]:
    """The bank questions of the student's classes (on one subject and skill key when given), in the
    order the teachers imported them."""
    query = select(ClassItem).join(CohortMember, CohortMember.cohort_id == ClassItem.cohort_id).where(
        CohortMember.user_id == user_id)
    if subject is not None:
        query = query.where(ClassItem.subject == subject)
    if skill is not None:
        query = query.where(ClassItem.skill == skill)
    return list(await db.scalars(query.order_by(ClassItem.id)))
