"""a class's library: user_files and library_chunks get cohort_id (a class's file, stored and indexed
once for its students; user_id empty on it), and class_file_opens (which students opened which file)

Revision ID: 0024
Revises: 0023
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TIME = bot.storage.models.UTCDateTime
_TABLES = ("user_files", "library_chunks")


_COLUMN = "cohort_id INTEGER REFERENCES cohorts (id) ON DELETE CASCADE"
_FK = "FOREIGN KEY(cohort_id) REFERENCES cohorts (id) ON DELETE CASCADE, \n\t"
# SQLite's schema text as the models would have it (a constraint of the table, as SQLAlchemy reads it).
_SQLITE_UPGRADE = (("user_id INTEGER NOT NULL, ", "user_id INTEGER, "),
                   (f"{_COLUMN}, ", "cohort_id INTEGER, "),
                   ("PRIMARY KEY (id), \n\t", f"PRIMARY KEY (id), \n\t{_FK}"))
# Back: the column no longer in a foreign key (else SQLite cannot drop it), user_id NOT NULL again.
_SQLITE_DOWNGRADE = (("user_id INTEGER, ", "user_id INTEGER NOT NULL, "), (_FK, ""))


def _sqlite_edit(edits: tuple[tuple[str, str], ...]) -> None:
    """On SQLite, user_id's NOT NULL dropped (or put back) by editing the tables' schema text, as
    SQLite's ALTER TABLE page describes for removing a NOT NULL or a foreign key constraint: copying
    these tables (a batch migration) would drop the old ones, and with foreign keys on that deletes
    every chunk and pending delivery of every file by cascade. The rows' format does not change."""
    version = op.get_bind().exec_driver_sql("PRAGMA schema_version").scalar_one()
    op.execute("PRAGMA writable_schema=ON")
    for table in _TABLES:
        for before, after in edits:
            op.execute(sa.text("UPDATE sqlite_master SET sql = replace(sql, :before, :after) "
                               "WHERE type = 'table' AND name = :name")
                       .bindparams(before=before, after=after, name=table))
    op.execute(f"PRAGMA schema_version={int(version) + 1}")
    op.execute("PRAGMA writable_schema=OFF")


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table in _TABLES:
        if sqlite:  # SQLite adds a column with its reference only in the column's own clause
            op.execute(f"ALTER TABLE {table} ADD COLUMN {_COLUMN}")
        else:
            op.add_column(table, sa.Column("cohort_id", _ID, nullable=True))
            op.create_foreign_key(f"fk_{table}_cohort_id", table, "cohorts", ["cohort_id"], ["id"],
                                  ondelete="CASCADE")
            op.alter_column(table, "user_id", existing_type=_ID, nullable=True)
    if sqlite:
        _sqlite_edit(_SQLITE_UPGRADE)
    op.create_index("ix_user_files_cohort", "user_files", ["cohort_id"], unique=False)
    op.create_index("ix_library_chunks_cohort", "library_chunks", ["cohort_id", "model"], unique=False)
    op.create_table(
        "class_file_opens",
        sa.Column("file_id", _ID, nullable=False),
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("first_at", _TIME(), nullable=False),
        sa.Column("last_at", _TIME(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["file_id"], ["user_files.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("file_id", "user_id"),
    )


def downgrade() -> None:
    op.drop_table("class_file_opens")
    op.execute("DELETE FROM user_files WHERE user_id IS NULL")  # the classes' files, their chunks by cascade
    op.drop_index("ix_library_chunks_cohort", table_name="library_chunks")
    op.drop_index("ix_user_files_cohort", table_name="user_files")
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_edit(_SQLITE_DOWNGRADE)
        for table in _TABLES:
            op.execute(f"ALTER TABLE {table} DROP COLUMN cohort_id")
        return
    for table in _TABLES:
        op.alter_column(table, "user_id", existing_type=_ID, nullable=False)
        op.drop_constraint(f"fk_{table}_cohort_id", table, type_="foreignkey")
        op.drop_column(table, "cohort_id")
