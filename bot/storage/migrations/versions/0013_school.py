"""the school: classes of students, operators (admins, teachers bound to classes) and their dashboard
sessions, distress flags on a child's message

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TIME = bot.storage.models.UTCDateTime


def _classes() -> None:
    op.create_table(
        "cohorts",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("created_at", _TIME(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "cohort_members",
        sa.Column("cohort_id", _ID, nullable=False),
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("joined_at", _TIME(), nullable=False),
        sa.ForeignKeyConstraint(["cohort_id"], ["cohorts.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("cohort_id", "user_id"),
    )
    op.create_index("ix_cohort_members_user", "cohort_members", ["user_id"])


def _operators() -> None:
    op.create_table(
        "operators",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("password_hash", sa.String(length=200), nullable=False),
        sa.Column("created_at", _TIME(), nullable=False),
        sa.Column("last_login_at", _TIME(), nullable=True),
        sa.Column("last_summary_at", _TIME(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("email"),
    )
    op.create_table(
        "operator_cohorts",
        sa.Column("operator_id", _ID, nullable=False),
        sa.Column("cohort_id", _ID, nullable=False),
        sa.ForeignKeyConstraint(["operator_id"], ["operators.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["cohort_id"], ["cohorts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("operator_id", "cohort_id"),
    )
    op.create_table(
        "operator_sessions",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("operator_id", _ID, nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", _TIME(), nullable=False),
        sa.Column("expires_at", _TIME(), nullable=False),
        sa.ForeignKeyConstraint(["operator_id"], ["operators.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("ix_operator_sessions_expires", "operator_sessions", ["expires_at"])


def _flags() -> None:
    op.create_table(
        "safety_flags",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("message_id", _ID, nullable=True),
        sa.Column("category", sa.String(length=32), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("excerpt", sa.Text(), nullable=False),
        sa.Column("created_at", _TIME(), nullable=False),
        sa.Column("acknowledged_at", _TIME(), nullable=True),
        sa.Column("acknowledged_by", _ID, nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["acknowledged_by"], ["operators.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_safety_flags_open", "safety_flags", ["acknowledged_at", "created_at"])
    op.create_index("ix_safety_flags_user", "safety_flags", ["user_id"])


def upgrade() -> None:
    _classes()
    _operators()
    _flags()


def downgrade() -> None:
    op.drop_table("safety_flags")
    op.drop_table("operator_sessions")
    op.drop_table("operator_cohorts")
    op.drop_table("operators")
    op.drop_table("cohort_members")
    op.drop_table("cohorts")
