"""reteach items: a quiz item's misses in a row and the options chosen when wrong, the new question
that teaches it again (`replaces_item_id`), when it was taught again and when it was retired

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TIME = bot.storage.models.UTCDateTime


def upgrade() -> None:
    with op.batch_alter_table("quiz_items") as batch:
        batch.add_column(sa.Column("miss_streak", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("wrong_answers", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("replaces_item_id", _ID, nullable=True))
        batch.add_column(sa.Column("retaught_at", _TIME(), nullable=True))
        batch.add_column(sa.Column("retired_at", _TIME(), nullable=True))
        batch.create_foreign_key("fk_quiz_items_replaces", "quiz_items", ["replaces_item_id"], ["id"],
                                 ondelete="SET NULL")
    # An item answered wrong last already counts one miss in a row: its next miss asks for a re-teach.
    op.execute("UPDATE quiz_items SET miss_streak = 1 WHERE last_correct = false")


def downgrade() -> None:
    with op.batch_alter_table("quiz_items") as batch:
        batch.drop_constraint("fk_quiz_items_replaces", type_="foreignkey")
        batch.drop_column("retired_at")
        batch.drop_column("retaught_at")
        batch.drop_column("replaces_item_id")
        batch.drop_column("wrong_answers")
        batch.drop_column("miss_streak")
