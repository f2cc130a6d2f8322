"""full-text search over user files

SQLite: an FTS5 table kept in step with user_files by triggers. PostgreSQL: a text search
configuration (French, accents ignored when unaccent is available) and a GIN expression index.
The statements live in bot.storage.models so that a schema made by create_all has them too.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.storage.models import USER_FILES_SEARCH_DDL, USER_FILES_SEARCH_DROP

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    for statement in USER_FILES_SEARCH_DDL.get(dialect, ()):
        op.execute(sa.text(statement))
    if dialect == "sqlite":
        # Index the files that existed before this migration.
        op.execute(sa.text("INSERT INTO user_files_fts(user_files_fts) VALUES ('rebuild')"))


def downgrade() -> None:
    for statement in USER_FILES_SEARCH_DROP.get(op.get_bind().dialect.name, ()):
        op.execute(sa.text(statement))
