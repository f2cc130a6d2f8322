"""A class's bank in its students' review: a REVISION round that has fewer due or missed questions
than it holds is filled with bank questions of the student's classes they have not answered yet,
each as their own quiz item (bot.school.bank.student_copy), so that once answered it comes back
by FSRS and moves mastery as any quiz.

The fill lives here, not in bot.learning's rounds: learning sits below the school and does not
know classes; handlers/review.py, which starts a round, asks both."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.school.bank import student_copy
from bot.storage.models import ClassItem, CohortMember, QuizItem

__all__ = ["bank_fill"]


async def bank_fill(db: AsyncSession, user_id: int, wanted: int, now: datetime,
                    conversation_id: int | None = None) -> list[QuizItem]:
    """Up to `wanted` bank questions of the student's classes never answered by them, in the order
    the teachers imported them, as the student's own items (one asked before but left unanswered
    is offered again, as the same item)."""
    if wanted <= 0:
        return []
    mine = and_(QuizItem.class_item_id == ClassItem.id, QuizItem.user_id == user_id)
    query = (select(ClassItem)
             .join(CohortMember, and_(CohortMember.cohort_id == ClassItem.cohort_id,
                                      CohortMember.user_id == user_id))
             .outerjoin(QuizItem, mine)
             .where(or_(QuizItem.id.is_(None), QuizItem.answers == 0))
             .order_by(ClassItem.id).limit(wanted))
    return [await student_copy(db, item, user_id, now, conversation_id)
            for item in list(await db.scalars(query))]
