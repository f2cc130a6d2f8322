"""turn budget and idempotent side effects

tool_effects keeps each side effect of a tool call under a key (inbound message, position in the
turn, tool) so that a turn run again after a crash does not repeat it; users get the approval
code of an e-mail change asked by SMS.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tool_effects",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True,
                  nullable=False),
        sa.Column("key", sa.String(length=160), nullable=False),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("tool", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("created_at", bot.storage.models.UTCDateTime(), nullable=False),
        sa.Column("finished_at", bot.storage.models.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key"),
    )
    with op.batch_alter_table("tool_effects", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tool_effects_user_id"), ["user_id"], unique=False)
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("email_approval_code", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("email_approval_code")
    with op.batch_alter_table("tool_effects", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tool_effects_user_id"))
    op.drop_table("tool_effects")
