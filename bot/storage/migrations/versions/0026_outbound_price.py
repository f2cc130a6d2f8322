"""outbound_messages.price_micro: a sent message's price as its row was recorded (an SMS's per
segment), which the status callback that says Twilio sent it copies into cost_micro in its one
UPDATE (bot.channel.metering)

Revision ID: 0026
Revises: 0025
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("outbound_messages", sa.Column("price_micro", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("outbound_messages") as batch:
        batch.drop_column("price_micro")
