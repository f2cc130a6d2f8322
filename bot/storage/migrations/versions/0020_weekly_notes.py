"""users.weekly_progress_notes: BILAN NON / SUMMARY OFF turns off the student's weekly note

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("users", sa.Column("weekly_progress_notes", sa.Boolean(), nullable=False,
                                     server_default=sa.true()))


def downgrade() -> None:
    # In place, never by copying `users`: on SQLite the copy's DROP TABLE would cascade to every row
    # that belongs to a user.
    with op.batch_alter_table("users", recreate="never") as batch_op:
        batch_op.drop_column("weekly_progress_notes")
