"""safety flags: when a flag left open was sent again to the admins (SAFETY_ESCALATE_AFTER_S)

Flags open before this revision have none: the first tick after it reminds the admins of each, once.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("safety_flags", schema=None) as batch_op:
        batch_op.add_column(sa.Column("escalated_at", bot.storage.models.UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("safety_flags", schema=None) as batch_op:
        batch_op.drop_column("escalated_at")
