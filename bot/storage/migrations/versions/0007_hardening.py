"""outbox, parent codes, retention

Parent codes: each parent-link request has its own random code (OUI 4821), with an expiry and the
time its SMS was accepted; users count wrong codes and are locked out for a while after too many.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


# --- parent codes ------------------------------------------------------------------------------


def _upgrade_parent_codes() -> None:
    with op.batch_alter_table("parent_links", schema=None) as batch_op:
        batch_op.add_column(sa.Column("code", sa.String(length=8), nullable=True))
        batch_op.add_column(sa.Column("code_expires_at", bot.storage.models.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("invited_at", bot.storage.models.UTCDateTime(), nullable=True))
    with op.batch_alter_table("users", schema=None) as batch_op:
        # Existing users have made no wrong attempt.
        batch_op.add_column(sa.Column("parent_code_failures", sa.Integer(), nullable=False,
                                      server_default=sa.text("0")))
        batch_op.add_column(sa.Column("parent_code_locked_until", bot.storage.models.UTCDateTime(),
                                      nullable=True))


def _downgrade_parent_codes() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("parent_code_locked_until")
        batch_op.drop_column("parent_code_failures")
    with op.batch_alter_table("parent_links", schema=None) as batch_op:
        batch_op.drop_column("invited_at")
        batch_op.drop_column("code_expires_at")
        batch_op.drop_column("code")


# --- upgrade / downgrade -----------------------------------------------------------------------


def upgrade() -> None:
    _upgrade_parent_codes()


def downgrade() -> None:
    _downgrade_parent_codes()
