"""What a teacher gives a class to do: the class's own bank of questions (`cohorts items import`),
and assignments (`cohorts assign`): N questions on one skill before a date, and each student's
progress through them. A student answers a bank question as a `QuizItem` of their own that points
back to it (`QuizItem.class_item_id`), so review, mastery and the heatmap treat it as any quiz."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from bot.storage.models.base import PK, Base, utcnow


class ClassItem(Base):
    """A teacher's question in a class's bank. `fingerprint` (SHA-256 of the question, its choices
    and its answer, folded) is unique per class, so importing the same file again adds nothing."""

    __tablename__ = "class_items"
    __table_args__ = (UniqueConstraint("cohort_id", "fingerprint", name="uq_class_items_fingerprint"),
                      Index("ix_class_items_skill", "cohort_id", "subject", "skill"))

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    cohort_id: Mapped[int] = mapped_column(ForeignKey("cohorts.id", ondelete="CASCADE"))
    subject: Mapped[str] = mapped_column(String(64))
    skill: Mapped[str] = mapped_column(String(200))  # the key (bot.learning skills)
    skill_label: Mapped[str] = mapped_column(String(200))  # as the teacher wrote it, to show
    quiz_type: Mapped[str] = mapped_column(String(8))  # mcq | tf
    question: Mapped[str] = mapped_column(Text)
    options: Mapped[list[Any]]
    correct_index: Mapped[int] = mapped_column(Integer)
    explanation: Mapped[str] = mapped_column(Text, default="")
    fingerprint: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Assignment(Base):
    """Homework set to a class: `questions` questions on one skill, due before `due_on` (the
    class's local date; None: no date). `created_by` is the operator's e-mail, or « console »."""

    __tablename__ = "assignments"
    __table_args__ = (Index("ix_assignments_cohort", "cohort_id"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    cohort_id: Mapped[int] = mapped_column(ForeignKey("cohorts.id", ondelete="CASCADE"))
    subject: Mapped[str] = mapped_column(String(64))
    skill: Mapped[str] = mapped_column(String(200))  # the key
    skill_label: Mapped[str] = mapped_column(String(200))
    questions: Mapped[int] = mapped_column(Integer)
    due_on: Mapped[date | None]
    created_by: Mapped[str] = mapped_column(String(320))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class AssignmentWork(Base):
    """One student's progress on one assignment: when they were told (and how: whatsapp, template,
    sms; None while not told), when they started and finished, and right/asked so far. `item_ids`
    are the student's QuizItems drawn for it, in the order asked."""

    __tablename__ = "assignment_work"
    __table_args__ = (Index("ix_assignment_work_user", "user_id"),)

    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"),
                                               primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    notified_at: Mapped[datetime | None]
    notified_by: Mapped[str | None] = mapped_column(String(16))
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    asked: Mapped[int] = mapped_column(Integer, default=0)
    correct: Mapped[int] = mapped_column(Integer, default=0)
    item_ids: Mapped[list[Any] | None]


class ClassFileOpen(Base):
    """A student who opened a class's file (read it with the tutor, or had it sent): when first,
    when last, how many times; shown per file on the class's page. Gone with the file or the student."""

    __tablename__ = "class_file_opens"

    file_id: Mapped[int] = mapped_column(ForeignKey("user_files.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    first_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_at: Mapped[datetime] = mapped_column(default=utcnow)
    count: Mapped[int] = mapped_column(Integer, default=1)
