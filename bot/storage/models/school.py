"""What a school or NGO running the bot sees: classes (cohorts) of students, the people who log in to
the dashboard (operators: admins and teachers, a teacher bound to their classes), their sessions, and
the distress flags raised on a child's message that a person must acknowledge, and what people did
with each flag (read the child's messages, held the conversation, wrote to the child)."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from bot.storage.models.base import PK, Base, utcnow


class Cohort(Base):
    """A class: `python -m bot cohorts create NAME`, filled by `cohorts import NAME FILE.csv`."""

    __tablename__ = "cohorts"

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # The credits a school put in for the class (`cohorts fund`), spent by its students before
    # their own; every change is a ledger row (bot.billing.pool).
    pool_balance: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class CohortMember(Base):
    """A student in a class; removed with the student (`users forget`) by the cascade."""

    __tablename__ = "cohort_members"
    __table_args__ = (Index("ix_cohort_members_user", "user_id"),)

    cohort_id: Mapped[int] = mapped_column(ForeignKey("cohorts.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    joined_at: Mapped[datetime] = mapped_column(default=utcnow)


class Operator(Base):
    """A person who logs in at /admin/: role admin (sees everything) or teacher (their classes only).
    `password_hash` is an Argon2id hash; `last_summary_at` when the weekly class summary last went out."""

    __tablename__ = "operators"

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)  # stored lower-cased
    role: Mapped[str] = mapped_column(String(16))  # admin | teacher
    password_hash: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_login_at: Mapped[datetime | None]
    last_summary_at: Mapped[datetime | None]


class OperatorCohort(Base):
    """Which classes a teacher sees."""

    __tablename__ = "operator_cohorts"

    operator_id: Mapped[int] = mapped_column(ForeignKey("operators.id", ondelete="CASCADE"), primary_key=True)
    cohort_id: Mapped[int] = mapped_column(ForeignKey("cohorts.id", ondelete="CASCADE"), primary_key=True)


class OperatorSession(Base):
    """A dashboard login: the cookie carries a random token, the table keeps only its SHA-256
    (`token_hash`), so a leaked table opens no session. Logout deletes the row."""

    __tablename__ = "operator_sessions"
    __table_args__ = (Index("ix_operator_sessions_expires", "expires_at"),)

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    operator_id: Mapped[int] = mapped_column(ForeignKey("operators.id", ondelete="CASCADE"))
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]


class SafetyFlag(Base):
    """A child's message that signalled distress: answered first with a helpline, then shown to the
    class's teacher and the operator until a person acknowledges it. `source` says what raised it
    (phrases | meaning | moderation), `category` what it is (bot.safety.CATEGORIES); `excerpt` is
    shown to admins only, never to teachers or parents. `escalated_at`: when the flag, still open
    after SAFETY_ESCALATE_AFTER_S, was sent again to the admins (once; the claim of that send)."""

    __tablename__ = "safety_flags"
    __table_args__ = (Index("ix_safety_flags_open", "acknowledged_at", "created_at"),
                      Index("ix_safety_flags_user", "user_id"))

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    message_id: Mapped[int | None] = mapped_column(ForeignKey("messages.id", ondelete="SET NULL"))
    category: Mapped[str] = mapped_column(String(32))
    source: Mapped[str] = mapped_column(String(16))
    excerpt: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    acknowledged_at: Mapped[datetime | None]
    acknowledged_by: Mapped[int | None] = mapped_column(ForeignKey("operators.id", ondelete="SET NULL"))
    escalated_at: Mapped[datetime | None]
    # A person of the school holds the conversation (bot.safety.hold): the tutor does not answer
    # the child meanwhile. `held_at` is when they took it or last wrote to the child: the hold
    # lapses HUMAN_HOLD_S after it. `hold_told_at`: the child was told that a person reads (once a hold).
    held_by: Mapped[int | None] = mapped_column(ForeignKey("operators.id", ondelete="SET NULL"))
    held_at: Mapped[datetime | None]
    hold_told_at: Mapped[datetime | None]


# After a child's distress the bot is gentle with them (bot.safety.gentle): while a flag is open, and
# for this long after one was raised. Kept with the table so that safety and learning (which may
# not import safety) read one rule.
GENTLE_S = 24 * 3600


def gentle_flag(now: datetime) -> ColumnElement[bool]:
    """A flag that keeps its child's day gentle at `now`: still open, or raised within GENTLE_S."""
    return SafetyFlag.acknowledged_at.is_(None) | (SafetyFlag.created_at > now - timedelta(seconds=GENTLE_S))


class SafetyFlagEvent(Base):
    """What a person did with a flag, for the record: `read` (the flag's page showed them the
    child's messages), `take`, `reply` (`detail`: sent, or why not), `release`, and `expire` (the
    hold lapsed). The operator's e-mail is kept beside their id: the record outlives the account."""

    __tablename__ = "safety_flag_events"
    __table_args__ = (Index("ix_safety_flag_events_flag", "flag_id", "id"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    flag_id: Mapped[int] = mapped_column(ForeignKey("safety_flags.id", ondelete="CASCADE"))
    operator_id: Mapped[int | None] = mapped_column(ForeignKey("operators.id", ondelete="SET NULL"))
    operator_email: Mapped[str] = mapped_column(String(320), default="")
    action: Mapped[str] = mapped_column(String(16))
    detail: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
