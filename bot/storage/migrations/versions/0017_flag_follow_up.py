"""a person follows a flag up: who holds the child's conversation and since when, whether the child
was told, and the record of what people did with each flag (read, take, reply, release, expire)

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TIME = bot.storage.models.UTCDateTime
_HELD_BY = "fk_safety_flags_held_by_operators"


def upgrade() -> None:
    # A batch: SQLite adds a foreign key only by copying the table (its rows come along).
    with op.batch_alter_table("safety_flags") as batch:
        batch.add_column(sa.Column("held_by", _ID, nullable=True))
        batch.add_column(sa.Column("held_at", _TIME(), nullable=True))
        batch.add_column(sa.Column("hold_told_at", _TIME(), nullable=True))
        batch.create_foreign_key(_HELD_BY, "operators", ["held_by"], ["id"], ondelete="SET NULL")
    op.create_table(
        "safety_flag_events",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("flag_id", _ID, nullable=False),
        sa.Column("operator_id", _ID, nullable=True),
        sa.Column("operator_email", sa.String(length=320), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("detail", sa.String(length=200), nullable=False),
        sa.Column("created_at", _TIME(), nullable=False),
        sa.ForeignKeyConstraint(["flag_id"], ["safety_flags.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["operator_id"], ["operators.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_safety_flag_events_flag", "safety_flag_events", ["flag_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_safety_flag_events_flag", table_name="safety_flag_events")
    op.drop_table("safety_flag_events")
    with op.batch_alter_table("safety_flags") as batch:
        batch.drop_constraint(_HELD_BY, type_="foreignkey")
        batch.drop_column("hold_told_at")
        batch.drop_column("held_at")
        batch.drop_column("held_by")
