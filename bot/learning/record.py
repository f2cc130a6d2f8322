"""Recording what a student did: every quiz asked kept as an item, every answer the server checked
written once as a result that moves the skill's mastery and the item's schedule, and what the model
only reported written apart (unverified: it never moves mastery).

An answer with no topic counts under the subject as a whole: skill key "" with the subject's name
as its label, so it still says something about the student without inventing a skill."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.config_groups import Learning
from bot.learning.mastery import record_checked_answer
from bot.learning.reteach import after_answer
from bot.learning.review import next_review
from bot.learning.skills import resolve_skill
from bot.learning.study_hours import StudyTime, study_time
from bot.learning.subjects import OTHER, canonical_subject, known_subject, skill_key, skill_label
from bot.storage.models import ExerciseResult, QuizItem


async def conversation_subject(db: AsyncSession, conversation_id: int) -> str | None:
    """The subject last worked on in this conversation: its latest result or quiz item."""
    latest: tuple[datetime, int, str] | None = None
    for model in (ExerciseResult, QuizItem):
        row = (await db.execute(
            select(model.created_at, model.id, model.subject)
            .where(model.conversation_id == conversation_id, model.subject != "")
            .order_by(model.created_at.desc(), model.id.desc()).limit(1)
        )).first()
        if row is not None and (latest is None or row.created_at > latest[0]):
            latest = (row.created_at, row.id, row.subject)
    return None if latest is None else canonical_subject(latest[2])


async def subject_for(db: AsyncSession, conversation_id: int, given: str) -> str:
    """The canonical subject of `given`; when none was given, the conversation's last one, else
    « Autre ». A name we do not know is « Autre » too (one list of subjects)."""
    if given.strip():
        return known_subject(given) or OTHER
    return await conversation_subject(db, conversation_id) or OTHER


def skill_of(subject: str, topic: str) -> tuple[str, str]:
    """(skill key, label to show): the topic's, or the subject as a whole when there is no topic."""
    key = skill_key(topic)
    return (key, skill_label(topic)) if key else ("", subject)


async def student_skill(db: AsyncSession, user_id: int, subject: str, topic: str,
                        item: QuizItem | None = None) -> tuple[str, str]:
    """skill_of, with the key one the student already has when it names the same skill
    (bot.learning.skills); an answer to a kept item counts under the item's key."""
    if item is not None:
        return (item.skill, skill_label(topic) or item.skill) if item.skill else ("", subject)
    key, label = skill_of(subject, topic)
    return (await resolve_skill(db, user_id, subject, topic) if key else ""), label


async def keep_item(db: AsyncSession, *, quiz_id: str, quiz_type: str, user_id: int,
                    conversation_id: int | None, question: str, options: tuple[str, ...], correct_index: int,
                    explanation: str, subject: str, topic: str, now: datetime,
                    class_item_id: int | None = None) -> QuizItem:
    """The asked quiz kept for review (no card and no due date until its first answer);
    `class_item_id` when it is the student's copy of a question of their class's bank."""
    item = QuizItem(
        user_id=user_id, conversation_id=conversation_id, quiz_id=quiz_id, quiz_type=quiz_type,
        question=question, options=list(options), correct_index=correct_index, explanation=explanation,
        subject=subject, skill=await resolve_skill(db, user_id, subject, topic), answers=0, lapses=0,
        created_at=now, class_item_id=class_item_id,
    )
    db.add(item)
    await db.flush()
    return item


async def find_item(db: AsyncSession, user_id: int, quiz_id: str) -> QuizItem | None:
    return await db.scalar(select(QuizItem).where(QuizItem.quiz_id == quiz_id, QuizItem.user_id == user_id))


def schedule(item: QuizItem, correct: bool, now: datetime, study: StudyTime | None = None,
             chosen: int | None = None) -> None:
    """The item's next review after one answer: a miss comes back soon, a right answer later, both at
    the student's study hour (`study`); its misses counted (bot.learning.reteach), `chosen` the option
    picked."""
    card: dict[str, Any]
    card, due = next_review(item.card, correct, now, study)
    item.card = card
    item.due_at = due
    item.last_answered_at = now
    item.last_correct = correct
    item.answers = (item.answers or 0) + 1
    item.lapses = (item.lapses or 0) + int(not correct)
    after_answer(item, correct, now, chosen)


async def record_checked(
    db: AsyncSession, learning: Learning, *, user_id: int, conversation_id: int | None,
    item: QuizItem | None, subject: str, topic: str, correct: bool, seconds: float | None,
    source: str, now: datetime, chosen: int | None = None,
) -> ExerciseResult:
    """One answer the server checked (a quiz's or a review's): the result, the skill's mastery and,
    when the question is a kept item, its schedule. The caller commits, once, with whatever marks
    the inbound message as answered, so a retried delivery records nothing twice."""
    subject = canonical_subject(subject)
    key, label = await student_skill(db, user_id, subject, topic, item)
    if item is not None:
        schedule(item, correct, now, await study_time(db, user_id, now), chosen)
    result = ExerciseResult(
        user_id=user_id, conversation_id=conversation_id, subject=subject, topic=skill_label(topic),
        skill=key, correct=correct, time_to_answer_s=seconds, source=source, verified=True,
        item_id=None if item is None else item.id, created_at=now,
    )
    db.add(result)
    await record_checked_answer(db, learning, user_id=user_id, subject=subject, skill=key, label=label,
                                correct=correct, now=now)
    return result


async def record_reported(db: AsyncSession, *, user_id: int, conversation_id: int | None, subject: str,
                          topic: str, correct: bool, now: datetime) -> ExerciseResult:
    """A result the model only reported: kept, unverified, and mastery left as it is."""
    key, _label = await student_skill(db, user_id, canonical_subject(subject), topic)
    result = ExerciseResult(
        user_id=user_id, conversation_id=conversation_id, subject=subject, topic=skill_label(topic),
        skill=key, correct=correct, source="report", verified=False, created_at=now,
    )
    db.add(result)
    return result
