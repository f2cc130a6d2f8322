"""scheduled sends: reminder/summary claims, parent digests

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "scheduled_sends",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("key", sa.String(length=160), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("task_id", _ID, nullable=True),
        sa.Column("link_id", _ID, nullable=True),
        sa.Column("slot_at", bot.storage.models.UTCDateTime(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", bot.storage.models.UTCDateTime(), nullable=False),
        sa.Column("claimed_until", bot.storage.models.UTCDateTime(), nullable=True),
        sa.Column("last_error", sa.String(length=300), nullable=True),
        sa.Column("created_at", bot.storage.models.UTCDateTime(), nullable=False),
        sa.Column("updated_at", bot.storage.models.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["link_id"], ["parent_links.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key"),
    )
    with op.batch_alter_table("scheduled_sends", schema=None) as batch_op:
        batch_op.create_index("ix_scheduled_sends_due", ["status", "next_attempt_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_scheduled_sends_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("scheduled_sends", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_scheduled_sends_user_id"))
        batch_op.drop_index("ix_scheduled_sends_due")
    op.drop_table("scheduled_sends")
