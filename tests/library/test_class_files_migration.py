"""Migration 0024 on a database that already has a person's file, its chunks and a delivery waiting:
all kept (on SQLite the tables are not copied, which would have deleted the chunks by cascade), the
keyword index still finds the chunk, a class's file (no user) can be stored, a class removed takes
its files with it, and back to 0023 the person's rows are still there — on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.storage.db import make_engine
from bot.storage.migrate import alembic_config, upgrade
from tests.support.migrations import database_at

NOW = "2026-11-30 10:00:00"
BEFORE = (
    "INSERT INTO users (id, phone, mode, role, language, timezone, email_verified, opted_out, "
    f"credit_balance, delivery_failures, created_at) VALUES (1, '+2250700000001', 'child', 'student', "
    f"'fr', 'Africa/Abidjan', false, false, 0, 0, '{NOW}')",
    "INSERT INTO user_files (id, user_id, name, mime, size, origin, storage_key, text, created_at) "
    f"VALUES (5, 1, 'notes.txt', 'text/plain', 9, 'upload', 'u1/a.txt', 'les notes', '{NOW}')",
    "INSERT INTO library_chunks (id, user_id, file_id, ordinal, locator, text, terms, words, source_chars, "
    f"attempts, created_at) VALUES (8, 1, 5, 0, '', 'les notes', 'notes note', 2, 9, 0, '{NOW}')",
    "INSERT INTO pending_deliveries (id, user_id, file_id, text, kind, created_at) "
    f"VALUES (2, 1, 5, 'ton fichier', 'file', '{NOW}')",
)
COUNTS = ("SELECT (SELECT count(*) FROM user_files), (SELECT count(*) FROM library_chunks), "
          "(SELECT count(*) FROM pending_deliveries)")


async def _found(conn: AsyncConnection, dialect: str) -> list[int]:
    if dialect == "sqlite":
        sql = "SELECT rowid FROM library_chunks_fts WHERE library_chunks_fts MATCH 'note'"
    else:
        sql = ("SELECT id FROM library_chunks "
               "WHERE to_tsvector('simple'::regconfig, terms) @@ "
               "plainto_tsquery('simple'::regconfig, 'note')")
    return [int(r[0]) for r in (await conn.execute(text(sql))).all()]


async def test_0024_keeps_a_persons_files_and_takes_a_classs(backend_name: str, tmp_path: Path) -> None:
    async with database_at(backend_name, tmp_path, "0023") as url:
        engine = make_engine(url)
        try:
            dialect = engine.dialect.name
            async with engine.begin() as conn:
                for statement in BEFORE:
                    await conn.execute(text(statement))
            await upgrade(url, engine=engine)
            async with engine.begin() as conn:
                kept = tuple((await conn.execute(text(COUNTS))).one())
                found = await _found(conn, dialect)
                await conn.execute(text(f"INSERT INTO cohorts (id, name, created_at) VALUES (3, '6e A', "
                                        f"'{NOW}')"))
                await conn.execute(text(
                    "INSERT INTO user_files (id, user_id, cohort_id, name, mime, size, origin, storage_key, "
                    f"created_at) VALUES (6, NULL, 3, 'cours.txt', 'text/plain', 5, 'class', 'c3/b.txt', "
                    f"'{NOW}')"))
                await conn.execute(text(
                    "INSERT INTO library_chunks (id, user_id, cohort_id, file_id, ordinal, locator, text, "
                    "terms, words, source_chars, attempts, created_at) VALUES (9, NULL, 3, 6, 0, '', "
                    f"'cours', 'cour', 1, 5, 0, '{NOW}')"))
                await conn.execute(text(f"INSERT INTO class_file_opens VALUES (6, 1, '{NOW}', '{NOW}', 1)"))
                with_class = tuple((await conn.execute(text(COUNTS))).one())
            async with engine.begin() as conn:
                await conn.execute(text("DELETE FROM cohorts WHERE id = 3"))
            async with engine.begin() as conn:
                without = tuple((await conn.execute(text(COUNTS))).one())
                opens = (await conn.execute(text("SELECT count(*) FROM class_file_opens"))).scalar_one()
                await conn.run_sync(lambda sync: command.downgrade(alembic_config(sync), "0023"))
            async with engine.connect() as conn:
                back = tuple((await conn.execute(text(COUNTS))).one())
                found_back = await _found(conn, dialect)
        finally:
            await engine.dispose()
    assert kept == (1, 1, 1) and found == [8]
    assert with_class == (2, 2, 1)
    assert without == (1, 1, 1) and opens == 0
    assert back == (1, 1, 1) and found_back == [8]
