"""class items and assignments: a class's own bank of questions, homework set to a class and each
student's progress on it; a quiz item that is a student's copy of a bank question

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TIME = bot.storage.models.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "class_items",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("cohort_id", _ID, sa.ForeignKey("cohorts.id", ondelete="CASCADE"), nullable=False),
        sa.Column("subject", sa.String(64), nullable=False),
        sa.Column("skill", sa.String(200), nullable=False),
        sa.Column("skill_label", sa.String(200), nullable=False),
        sa.Column("quiz_type", sa.String(8), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("correct_index", sa.Integer(), nullable=False),
        sa.Column("explanation", sa.Text(), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("created_at", _TIME(), nullable=False),
        sa.UniqueConstraint("cohort_id", "fingerprint", name="uq_class_items_fingerprint"),
    )
    op.create_index("ix_class_items_skill", "class_items", ["cohort_id", "subject", "skill"])
    op.create_table(
        "assignments",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("cohort_id", _ID, sa.ForeignKey("cohorts.id", ondelete="CASCADE"), nullable=False),
        sa.Column("subject", sa.String(64), nullable=False),
        sa.Column("skill", sa.String(200), nullable=False),
        sa.Column("skill_label", sa.String(200), nullable=False),
        sa.Column("questions", sa.Integer(), nullable=False),
        sa.Column("due_on", sa.Date(), nullable=True),
        sa.Column("created_by", sa.String(320), nullable=False),
        sa.Column("created_at", _TIME(), nullable=False),
    )
    op.create_index("ix_assignments_cohort", "assignments", ["cohort_id"])
    op.create_table(
        "assignment_work",
        sa.Column("assignment_id", _ID, sa.ForeignKey("assignments.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("user_id", _ID, sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("notified_at", _TIME(), nullable=True),
        sa.Column("notified_by", sa.String(16), nullable=True),
        sa.Column("started_at", _TIME(), nullable=True),
        sa.Column("finished_at", _TIME(), nullable=True),
        sa.Column("asked", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("correct", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("item_ids", sa.JSON(), nullable=True),
    )
    op.create_index("ix_assignment_work_user", "assignment_work", ["user_id"])
    with op.batch_alter_table("quiz_items") as batch:
        batch.add_column(sa.Column("class_item_id", _ID, nullable=True))
        batch.create_foreign_key("fk_quiz_items_class_item", "class_items", ["class_item_id"], ["id"],
                                 ondelete="SET NULL")


def downgrade() -> None:
    with op.batch_alter_table("quiz_items") as batch:
        batch.drop_constraint("fk_quiz_items_class_item", type_="foreignkey")
        batch.drop_column("class_item_id")
    op.drop_index("ix_assignment_work_user", "assignment_work")
    op.drop_table("assignment_work")
    op.drop_index("ix_assignments_cohort", "assignments")
    op.drop_table("assignments")
    op.drop_index("ix_class_items_skill", "class_items")
    op.drop_table("class_items")
