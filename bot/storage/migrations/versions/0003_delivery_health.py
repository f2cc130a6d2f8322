"""delivery health and honest sends (outbound)

Users get the reason and time their number was blocked for proactive messages after repeated
permanent failures; files that could not reach the user wait in pending_deliveries for their
next message; a user's latest sends are found by an index on outbound_messages.user_id.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("delivery_blocked_reason", sa.String(length=160), nullable=True))
        batch_op.add_column(sa.Column("delivery_blocked_at", bot.storage.models.UTCDateTime(), nullable=True))
    with op.batch_alter_table("outbound_messages", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_outbound_messages_user_id"), ["user_id"], unique=False)
    op.create_table(
        "pending_deliveries",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True,
                  nullable=False),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("file_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("created_at", bot.storage.models.UTCDateTime(), nullable=False),
        sa.Column("sent_at", bot.storage.models.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["file_id"], ["user_files.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("pending_deliveries", schema=None) as batch_op:
        batch_op.create_index("ix_pending_deliveries_user", ["user_id", "sent_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("pending_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_pending_deliveries_user")
    op.drop_table("pending_deliveries")
    with op.batch_alter_table("outbound_messages", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_outbound_messages_user_id"))
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("delivery_blocked_at")
        batch_op.drop_column("delivery_blocked_reason")
