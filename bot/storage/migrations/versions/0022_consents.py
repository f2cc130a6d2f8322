"""consents: a minor's consent to be tutored (CONSENT_MODE), by a parent's OUI or the school's import

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TIME = bot.storage.models.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "consents",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("student_id", _ID, nullable=False),
        sa.Column("given_by_id", _ID, nullable=True),
        sa.Column("given_by", sa.String(length=200), nullable=False),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("given_at", _TIME(), nullable=False),
        sa.ForeignKeyConstraint(["student_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["given_by_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_consents_student", "consents", ["student_id"])
    op.create_index("ix_consents_given_by", "consents", ["given_by_id"])


def downgrade() -> None:
    op.drop_table("consents")
