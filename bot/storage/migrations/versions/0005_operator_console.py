"""operator console and account erasure

The operator's `users credit --reason TEXT` keeps its words next to the ledger row.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("credit_entries", sa.Column("note", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("credit_entries") as batch:
        batch.drop_column("note")
