"""the outbox: outbound rows retried in the background until Twilio takes them

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("outbound_messages", schema=None) as batch_op:
        batch_op.add_column(sa.Column("idempotency_key", sa.String(length=120), nullable=True))
        batch_op.add_column(sa.Column("payload", sa.JSON(), nullable=True))
        # Rows written before the outbox were tried once, by the request that made them.
        batch_op.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("next_attempt_at", bot.storage.models.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("last_error", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("failure_told_at", bot.storage.models.UTCDateTime(), nullable=True))
        batch_op.create_unique_constraint("uq_outbound_messages_idempotency_key", ["idempotency_key"])
        batch_op.create_index(batch_op.f("ix_outbound_messages_next_attempt_at"), ["next_attempt_at"],
                              unique=False)


def downgrade() -> None:
    with op.batch_alter_table("outbound_messages", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_outbound_messages_next_attempt_at"))
        batch_op.drop_constraint("uq_outbound_messages_idempotency_key", type_="unique")
        batch_op.drop_column("failure_told_at")
        batch_op.drop_column("last_error")
        batch_op.drop_column("next_attempt_at")
        batch_op.drop_column("attempts")
        batch_op.drop_column("payload")
        batch_op.drop_column("idempotency_key")
