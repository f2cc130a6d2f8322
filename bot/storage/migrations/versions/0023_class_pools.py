"""cohorts.pool_balance and credit_entries.cohort_id: a class's pool of credits, funded by the school
and spent by its students first, every change a row of the ledger (user_id empty on a funding)

Revision ID: 0023
Revises: 0022
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.add_column("cohorts", sa.Column("pool_balance", sa.Integer(), nullable=False, server_default="0"))
    # On SQLite the ledger is copied (a column's NOT NULL cannot be dropped in place); no table
    # refers to the ledger, so the copy cascades nowhere.
    with op.batch_alter_table("credit_entries") as batch:
        batch.add_column(sa.Column("cohort_id", _ID, nullable=True))
        batch.alter_column("user_id", existing_type=_ID, nullable=True)
        batch.create_foreign_key("fk_credit_entries_cohort_id", "cohorts", ["cohort_id"], ["id"],
                                 ondelete="CASCADE")
        batch.create_index("ix_credit_entries_cohort", ["cohort_id", "created_at"], unique=False)


def downgrade() -> None:
    op.execute("DELETE FROM credit_entries WHERE user_id IS NULL")
    with op.batch_alter_table("credit_entries") as batch:
        batch.drop_index("ix_credit_entries_cohort")
        batch.drop_constraint("fk_credit_entries_cohort_id", type_="foreignkey")
        batch.drop_column("cohort_id")
        batch.alter_column("user_id", existing_type=_ID, nullable=False)
    with op.batch_alter_table("cohorts", recreate="never") as batch:
        batch.drop_column("pool_balance")
