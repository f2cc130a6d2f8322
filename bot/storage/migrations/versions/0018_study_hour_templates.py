"""the hour a student studies, learned from their messages; template sends told apart (their cost)

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_TIME = bot.storage.models.UTCDateTime


def upgrade() -> None:
    op.add_column("users", sa.Column("study_hour", sa.Integer(), nullable=True))
    op.add_column("users", sa.Column("study_hour_at", _TIME(), nullable=True))
    op.add_column("outbound_messages",
                  sa.Column("template", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    # Dropped in place, never by copying the table: on SQLite a copy drops `users`, and with foreign
    # keys on that deletes every row that cascades from a user (flags, messages, items).
    with op.batch_alter_table("outbound_messages", recreate="never") as batch:
        batch.drop_column("template")
    with op.batch_alter_table("users", recreate="never") as batch:
        batch.drop_column("study_hour_at")
        batch.drop_column("study_hour")
