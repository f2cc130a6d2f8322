"""erasures: the numbers and WhatsApp ids erased, as an HMAC each, so that a webhook of theirs left in
the spool is never stored again

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TIME = bot.storage.models.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "erasures",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("erased_at", _TIME(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_erasures_key", "erasures", ["key_hash"])


def downgrade() -> None:
    op.drop_index("ix_erasures_key", table_name="erasures")
    op.drop_table("erasures")
