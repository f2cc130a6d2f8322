"""the library's chunks: each file's text in 200–400 word pieces with their keyword text under
full-text search (FTS5 on SQLite, a 'simple' GIN index on PostgreSQL) and their embedding vectors.
Files stored before are cut by `python -m bot library reindex` or the library's periodic pass.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models
from bot.storage.models import LIBRARY_CHUNKS_SEARCH_DDL, LIBRARY_CHUNKS_SEARCH_DROP

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TIME = bot.storage.models.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "library_chunks",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("file_id", _ID, nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("locator", sa.String(length=80), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("terms", sa.Text(), nullable=False),
        sa.Column("words", sa.Integer(), nullable=False),
        sa.Column("source_chars", sa.Integer(), nullable=False),
        sa.Column("embedding", sa.LargeBinary(), nullable=True),
        sa.Column("model", sa.String(length=120), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("embed_after", _TIME(), nullable=True),
        sa.Column("created_at", _TIME(), nullable=False),
        sa.ForeignKeyConstraint(["file_id"], ["user_files.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_library_chunks_file", "library_chunks", ["file_id", "ordinal"], unique=True)
    op.create_index("ix_library_chunks_user", "library_chunks", ["user_id", "model"])
    for statement in LIBRARY_CHUNKS_SEARCH_DDL.get(op.get_bind().dialect.name, ()):
        op.execute(sa.text(statement))


def downgrade() -> None:
    for statement in LIBRARY_CHUNKS_SEARCH_DROP.get(op.get_bind().dialect.name, ()):
        op.execute(sa.text(statement))
    op.drop_index("ix_library_chunks_user", table_name="library_chunks")
    op.drop_index("ix_library_chunks_file", table_name="library_chunks")
    op.drop_table("library_chunks")
