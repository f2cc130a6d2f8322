"""outbound_messages.cost_micro and .category, inbound_messages.cost_micro: the cost meter's price of
each message, in millionths of a US dollar, set when Twilio reports it (bot.channel.prices)

Revision ID: 0025
Revises: 0024
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("outbound_messages", sa.Column("cost_micro", sa.Integer(), nullable=True))
    op.add_column("outbound_messages", sa.Column("category", sa.String(16), nullable=True))
    op.add_column("inbound_messages", sa.Column("cost_micro", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("inbound_messages") as batch:
        batch.drop_column("cost_micro")
    with op.batch_alter_table("outbound_messages") as batch:
        batch.drop_column("category")
        batch.drop_column("cost_micro")
