"""The library's index: each file's text in chunks, with their keyword text (folded and stemmed in
Python, bot.library.text) under full-text search, and their embedding vectors."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy import event as _event
from sqlalchemy.orm import Mapped, mapped_column

from bot.storage.models.base import PK, Base, utcnow

__all__ = ["LIBRARY_CHUNKS_SEARCH_DDL", "LIBRARY_CHUNKS_SEARCH_DROP", "LibraryChunk"]


class LibraryChunk(Base):
    """200–400 words of one file. `source_chars` is the file's text length when it was cut: a file
    whose text changed since (a photo read later, a voice note heard) is cut again."""

    __tablename__ = "library_chunks"
    __table_args__ = (
        Index("ix_library_chunks_file", "file_id", "ordinal", unique=True),
        Index("ix_library_chunks_user", "user_id", "model"),
        Index("ix_library_chunks_cohort", "cohort_id", "model"),
    )

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    # Its file's owner: a person, or a class (a class's file is indexed once for all its students).
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    cohort_id: Mapped[int | None] = mapped_column(ForeignKey("cohorts.id", ondelete="CASCADE"))
    file_id: Mapped[int] = mapped_column(ForeignKey("user_files.id", ondelete="CASCADE"))
    ordinal: Mapped[int] = mapped_column(Integer)
    locator: Mapped[str] = mapped_column(String(80), default="")  # « page 3 », « feuille Bilan »
    text: Mapped[str] = mapped_column(Text, default="")
    terms: Mapped[str] = mapped_column(Text, default="")  # the keyword text, file name included
    words: Mapped[int] = mapped_column(Integer, default=0)  # len(terms.split()), for BM25
    source_chars: Mapped[int] = mapped_column(Integer, default=0)
    embedding: Mapped[bytes | None] = mapped_column(LargeBinary)  # float32, L2-normalised
    model: Mapped[str | None] = mapped_column(String(120))  # what made `embedding`
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # failed embedding attempts
    embed_after: Mapped[datetime | None]  # the next attempt, after a failure
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


# Full-text search over the chunks' keyword text. Created with the table (create_all) and by
# migration 0014. The text is already folded and stemmed: the tokenizers only split it.
LIBRARY_CHUNKS_SEARCH_DDL: dict[str, tuple[str, ...]] = {
    "sqlite": (
        "CREATE VIRTUAL TABLE IF NOT EXISTS library_chunks_fts USING fts5("
        "terms, content='library_chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
        "CREATE TRIGGER IF NOT EXISTS library_chunks_fts_ai AFTER INSERT ON library_chunks BEGIN "
        "INSERT INTO library_chunks_fts(rowid, terms) VALUES (new.id, new.terms); END",
        "CREATE TRIGGER IF NOT EXISTS library_chunks_fts_ad AFTER DELETE ON library_chunks BEGIN "
        "INSERT INTO library_chunks_fts(library_chunks_fts, rowid, terms) "
        "VALUES ('delete', old.id, old.terms); "
        "END",
        "CREATE TRIGGER IF NOT EXISTS library_chunks_fts_au AFTER UPDATE OF terms ON library_chunks BEGIN "
        "INSERT INTO library_chunks_fts(library_chunks_fts, rowid, terms) "
        "VALUES ('delete', old.id, old.terms); "
        "INSERT INTO library_chunks_fts(rowid, terms) VALUES (new.id, new.terms); END",
    ),
    "postgresql": (
        "CREATE INDEX IF NOT EXISTS ix_library_chunks_fts ON library_chunks "
        "USING GIN (to_tsvector('simple'::regconfig, terms))",
    ),
}
LIBRARY_CHUNKS_SEARCH_DROP: dict[str, tuple[str, ...]] = {
    "sqlite": (
        "DROP TRIGGER IF EXISTS library_chunks_fts_au",
        "DROP TRIGGER IF EXISTS library_chunks_fts_ad",
        "DROP TRIGGER IF EXISTS library_chunks_fts_ai",
        "DROP TABLE IF EXISTS library_chunks_fts",
    ),
    "postgresql": ("DROP INDEX IF EXISTS ix_library_chunks_fts",),
}


def _run(statements: dict[str, tuple[str, ...]]) -> Any:
    def listener(target: Any, connection: Any, **_kw: Any) -> None:
        from sqlalchemy import text as sql

        for statement in statements.get(connection.dialect.name, ()):
            connection.execute(sql(statement))

    return listener


_event.listen(LibraryChunk.__table__, "after_create", _run(LIBRARY_CHUNKS_SEARCH_DDL))
_event.listen(LibraryChunk.__table__, "before_drop", _run(LIBRARY_CHUNKS_SEARCH_DROP))
