"""What the tutor remembers of a learner: every quiz asked, kept as an item for spaced review, and a
mastery estimate per (student, skill). Sessions are conversations (tables.Conversation)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from bot.storage.models.base import PK, Base, utcnow


class QuizItem(Base):
    """A question asked once in a quiz, asked again on review: `card` is its FSRS state
    (bot.learning.review), `due_at` when it should come back. One missed twice in a row is taught
    again by the model with a new question that `replaces_item_id` it (bot.learning.reteach)."""

    __tablename__ = "quiz_items"
    __table_args__ = (Index("ix_quiz_items_user_due", "user_id", "due_at"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    conversation_id: Mapped[int | None] = mapped_column(ForeignKey("conversations.id", ondelete="SET NULL"))
    quiz_id: Mapped[str] = mapped_column(String(32), unique=True)  # the asked quiz's id (Quiz.quiz_id)
    quiz_type: Mapped[str] = mapped_column(String(8))  # mcq | tf
    question: Mapped[str] = mapped_column(Text)
    options: Mapped[list[Any]]
    correct_index: Mapped[int] = mapped_column(Integer)
    explanation: Mapped[str] = mapped_column(Text, default="")
    subject: Mapped[str] = mapped_column(String(64), default="Autre")
    skill: Mapped[str] = mapped_column(String(200), default="")
    card: Mapped[dict[str, Any] | None]  # None until first answered
    due_at: Mapped[datetime | None]  # None until first answered
    last_answered_at: Mapped[datetime | None]
    last_correct: Mapped[bool | None] = mapped_column(Boolean)
    answers: Mapped[int] = mapped_column(Integer, default=0)
    lapses: Mapped[int] = mapped_column(Integer, default=0)  # wrong answers
    miss_streak: Mapped[int] = mapped_column(Integer, default=0)  # wrong answers in a row
    wrong_answers: Mapped[list[Any] | None]  # the options chosen when wrong (indices), the last few
    # On a question asked to teach an item again: that item.
    replaces_item_id: Mapped[int | None] = mapped_column(ForeignKey("quiz_items.id", ondelete="SET NULL"))
    retaught_at: Mapped[datetime | None]  # when a new question replacing it was last asked
    retired_at: Mapped[datetime | None]  # missed too often: no longer due, replaced by a new one
    # A question of the class's bank (bot.storage.models.classwork): the student's copy of it.
    class_item_id: Mapped[int | None] = mapped_column(ForeignKey("class_items.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class SkillMastery(Base):
    """P(known) of one skill for one student, by Bayesian Knowledge Tracing over checked answers only."""

    __tablename__ = "skill_mastery"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    subject: Mapped[str] = mapped_column(String(64), primary_key=True)
    skill: Mapped[str] = mapped_column(String(200), primary_key=True)  # normalised: the key
    label: Mapped[str] = mapped_column(String(200))  # the topic as first written, to show
    p_known: Mapped[float] = mapped_column(Float)
    answers: Mapped[int] = mapped_column(Integer, default=0)
    correct: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
