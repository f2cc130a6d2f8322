"""The webhook's fast paths agree with the slow ways they replace: the form split as parse_qsl
splits it, STOP told apart as its keyword tells it, the control-character check never missing one,
and a batch's rows on SQLite (sent as SQL text) the same as Core writes them."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import random
import shutil
import sqlite3
import sys
import unicodedata
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest
from sqlalchemy import Connection

from bot.channel import inbound_store as store
from bot.channel.inbound import CHECKPOINT_EVERY_S, WAL_FRAMES_LIMIT, InboundWriter, clean_form, has_control
from bot.channel.inbound_store import InboundParams
from bot.channel.keywords import ALNUM, STOP_WORDS, is_stop, keyword
from bot.channel.locale import Locale
from bot.channel.webhook_checks import parse_form
from bot.storage import counting
from bot.storage.db import make_engine, make_sync_engine
from bot.storage.migrate import upgrade
from tests.support.harness import Database
from tests.support.waiting import eventually

# Pieces a hostile or odd form body is made of: escapes of the separators, of UTF-8 (whole, cut,
# invalid), of controls, raw non-ASCII, pluses and empty fields.
PIECES = ["a", "Z", "0", "&", "=", "+", "%", "%2", "%26", "%3D", "%3d", "%2B", "%20", "%C3%A9", "%C3",
          "%A9", "%E2%82%AC", "%ED%A0%80", "%FF", "%ZZ", "%00", "%0A", "%1f", "%7F", "é", "€", "日",
          "\x01", "&&", "==", "Body", "From=", "whatsapp%3A%2B225"]


def bodies(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14))) for _ in range(count)]


def split_as_parse_qsl(text: str) -> list[tuple[str, str]] | type[Exception]:
    try:
        return parse_qsl(text, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        return UnicodeDecodeError


def split_as_parse_form(text: str) -> list[tuple[str, str]] | type[Exception]:
    try:
        return parse_form(text)
    except UnicodeDecodeError:
        return UnicodeDecodeError


def test_parse_form_splits_and_refuses_every_body_as_parse_qsl_does() -> None:
    cases = [*bodies(5000, seed=28), "", "&", "=", "a", "a=", "=b", "a=b=c", "a=%26&b=%3D",
             "Body=STOP%21+", "a=%C3&b=%A9", "a=%C3%A9%C3"]
    refused = 0
    for text in cases:
        expected = split_as_parse_qsl(text)
        assert split_as_parse_form(text) == expected, text
        refused += expected is UnicodeDecodeError
    assert 100 < refused < len(cases) - 1000  # both outcomes were tried, many times each


def test_a_body_without_control_characters_is_left_as_it_is_and_one_with_them_is_seen() -> None:
    seen = 0
    for text in bodies(3000, seed=7):
        raw = text.encode()
        pairs = split_as_parse_qsl(text)
        if pairs is UnicodeDecodeError:
            continue
        assert isinstance(pairs, list)
        if clean_form(pairs) != pairs:
            assert has_control(raw), text  # never missed
            seen += 1
        if not has_control(raw):
            assert clean_form(pairs) == pairs
    assert seen > 100
    assert has_control(b"Body=a%0bb") and has_control(b"Body=a\x1fb") and has_control(b"Body=%1F")
    assert not has_control(b"Body=a%0Ab%0D%09+c") and not has_control(b"Body=%7F%20%2B")


def test_no_combining_mark_is_a_letter_or_digit() -> None:
    # What is_stop's shortcut stands on: each letter or digit of a message stays in its keyword.
    import re

    alnum = re.compile(ALNUM)
    marks = [c for c in map(chr, range(sys.maxunicode + 1)) if unicodedata.combining(c)]
    assert len(marks) > 900
    assert not [c for c in marks if alnum.match(c)]


def test_is_stop_says_what_the_keyword_says() -> None:
    tricky = ["STOP", "stop", " Stop ! ", "Arrêt", "ARRÊT...", "A\u0301rret", "ＳＴＯＰ", "ⓈⓉⓄⓅ", "STOP¨",
              "**stop**", "~stop~", "_STOP_", "stop" + "!" * 200, "stop" + "\u0301" * 300,
              " \u00a0stop\u2003", "S T O P", "stop please", "unsubscribe", "UNSUBSCRIBEX", "stopall",
              "STOP ALL", "start", "ﷺ", "1234567890123", "stop1", "Bonjour, question numéro 12"]
    rng = random.Random(3)
    letters = ["s", "t", "o", "p", "S", "A", "r", "e", "ê", "\u0301", " ", "!", "…", "*", "_", "~", "¨",
               "Ｓ", "1", "\u00a0", "."]
    generated = ["".join(rng.choice(letters) for _ in range(rng.randint(0, 16))) for _ in range(20000)]
    stops = 0
    for text in tricky + generated:
        expected = keyword(text) in STOP_WORDS
        assert is_stop(text) is expected, repr(text)
        stops += expected
    assert stops > 10
    assert is_stop("stop" + "\u0301" * 300) and is_stop("ⓈⓉⓄⓅ") and not is_stop("stop please")


# --- a batch's rows: SQL text on SQLite against Core --------------------------------------------

NOW = datetime(2026, 12, 2, 19, 30, 5, 123456, tzinfo=UTC)


def webhook(sid: str, phone: str, body: str = "Bonjour", **extra: object) -> InboundParams:
    fields = {"MessageSid": sid, "From": f"whatsapp:{phone}", "Body": body, "Quote": "l'été \"x\" €"}
    return InboundParams(message_sid=sid, channel="whatsapp", from_addr=f"whatsapp:{phone}",
                         to_addr="whatsapp:+14155238886", body=body, phone=phone, external_id=None,
                         profile_name="Awa", params=fields, **extra)  # type: ignore[arg-type]


BATCHES = [
    [(webhook("SM1", "+2250700000001"), NOW), (webhook("SM2", "+2250700000002", "Arrêt !"), NOW)],
    [(webhook("SM3", "+2250700000001", "x" * 3000), NOW + timedelta(seconds=1)),
     (webhook("SM3", "+2250700000001"), NOW),  # the same MessageSid twice in one batch
     (webhook("SM1", "+2250700000001"), NOW),  # one stored before
     (webhook("SM4", "+2250700000003", "photo", media=[{"url": "https://api.twilio.com/m/1",
                                                         "content_type": "image/jpeg"}]),
      NOW.astimezone(timezone(timedelta(hours=-5))))],  # another zone: stored as UTC
    [(webhook("SM5", "+2250700000003", "Salut"), NOW)],
]


async def write_all(path: Path, sqlite_text: bool) -> tuple[list[object], sqlite3.Connection]:
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade(url)
    engine = make_sync_engine(url)
    how = store.Batch(dataclasses.replace(store.statements("sqlite"), sqlite_text=sqlite_text),
                      store.UserCache(100), Locale("Africa/Abidjan", "fr"))
    results: list[object] = []
    try:
        with engine.connect() as conn:
            for number, batch in enumerate(BATCHES):
                with conn.begin():
                    if number == 1:  # a sender whose sends failed: the next message resets them
                        failing(conn)
                    results.append(store.write_batch(conn, how, batch))
    finally:
        engine.dispose()
    return results, sqlite3.connect(path)


def failing(conn: Connection) -> None:
    conn.exec_driver_sql("UPDATE users SET delivery_failures = 3, delivery_blocked_reason = 'x', "
                         "delivery_blocked_at = '2026-12-01 10:00:00.000000'")


def table(db: sqlite3.Connection, name: str) -> list[tuple[object, ...]]:
    columns = [row[1] for row in db.execute(f"PRAGMA table_info({name})")]
    rows = db.execute(f"SELECT * FROM {name} ORDER BY id").fetchall()
    # JSON compared as what it holds (Core spaces its text, orjson does not); the rest as stored,
    # with SQLite's type of each value.
    return [tuple((c, json.loads(v) if c in ("media", "params") and v is not None else v,
                   type(v).__name__) for c, v in zip(columns, row, strict=True)) for row in rows]


async def test_sqlite_text_writes_the_rows_core_writes(tmp_path: Path) -> None:
    core_results, core = await write_all(tmp_path / "core.db", sqlite_text=False)
    text_results, text = await write_all(tmp_path / "text.db", sqlite_text=True)
    assert text_results == core_results
    assert core_results[1] == [(1, 3), (1, None), (1, None), (3, 4)]
    for name in ("inbound_messages", "users"):
        assert table(text, name) == table(core, name), name
    users = text.execute("SELECT phone, delivery_failures, delivery_blocked_at, opted_out FROM users "
                         "ORDER BY id").fetchall()
    # +2250700000002 typed « Arrêt ! »; only the senders of the second batch had their health reset.
    assert users == [("+2250700000001", 0, None, 0), ("+2250700000002", 3, "2026-12-01 10:00:00.000000", 1),
                     ("+2250700000003", 0, None, 0)]
    created = text.execute("SELECT created_at FROM inbound_messages WHERE message_sid = 'SM4'").fetchone()
    assert created == ("2026-12-02 19:30:05.123456",)


async def test_a_naive_time_is_refused_by_both_ways(tmp_path: Path) -> None:
    for sqlite_text in (False, True):
        url = f"sqlite+aiosqlite:///{tmp_path / f'{sqlite_text}.db'}"
        await upgrade(url)
        engine = make_sync_engine(url)
        how = store.Batch(dataclasses.replace(store.statements("sqlite"), sqlite_text=sqlite_text),
                          store.UserCache(10), Locale("Africa/Abidjan", "fr"))
        try:
            with engine.connect() as conn, pytest.raises(Exception, match="naive datetime"), conn.begin():
                store.write_batch(conn, how, [(webhook("SM9", "+2250700000009"), datetime(2026, 12, 2))])
        finally:
            engine.dispose()


# --- a batch on PostgreSQL: one statement against Core ------------------------------------------


def renamed(batch: list[tuple[InboundParams, datetime]], prefix: str) -> list[tuple[InboundParams, datetime]]:
    return [(dataclasses.replace(p, message_sid=prefix + p.message_sid), now) for p, now in batch]


Shape = tuple[list[tuple[int, bool]], int, int]


async def write_with(writer: InboundWriter, prefix: str, core: bool) -> list[Shape]:
    """Each batch of BATCHES (MessageSids prefixed) submitted at once, the senders looked up
    through Core each time (`core`) or known from the writer's cache; per batch, who got a row and
    the transactions and statements it cost."""
    shapes: list[Shape] = []
    for number, batch in enumerate(BATCHES):
        if number == 1:  # a sender whose sends failed: the next message resets them
            async with writer.engine.begin() as conn:
                await conn.run_sync(failing)
        if core:
            writer._batch.cache.clear()
        with counting.record() as counts:
            got = await asyncio.gather(*(writer.submit(p, now) for p, now in renamed(batch, prefix)))
        stored = [(user, row is not None) for user, row in got]
        shapes.append((stored, counts.transactions, counts.statements))
    return shapes


@pytest.mark.postgres_only
async def test_postgres_one_statement_writes_the_rows_core_writes(test_database: Database) -> None:
    """A batch of known senders with no STOP is one statement, its own transaction; what it
    stores is what Core's transaction stores."""
    engine = make_engine(test_database.url)
    writer = InboundWriter(engine)
    try:
        core = await write_with(writer, "C", core=True)
        one = await write_with(writer, "F", core=False)
        async with engine.connect() as conn:
            rows: list[Any] = list((await conn.exec_driver_sql(
                "SELECT message_sid, user_id, channel, from_addr, to_addr, body, media::text, params::text, "
                "status, attempts, lease_until, error, created_at, processed_at, cost_micro "
                "FROM inbound_messages ORDER BY id")).all())
            health = (await conn.exec_driver_sql("SELECT delivery_failures, delivery_blocked_at IS NULL, "
                                                 "opted_out FROM users ORDER BY id")).all()
    finally:
        await writer.close()
        await engine.dispose()
    assert [shape for shape, _, _ in one] == [shape for shape, _, _ in core]
    assert [shape for shape, _, _ in core][1] == [(1, True), (1, False), (1, False), (3, True)]
    assert all(statements > 1 for _, _, statements in core)
    # The first batch holds a STOP: a transaction of its own; the others, one statement each.
    assert [counts for _, *counts in one][1:] == [[1, 1], [1, 1]]

    def stored(prefix: str) -> list[tuple[object, ...]]:
        return [(row[0][1:], *row[1:6], json.loads(row[6]), json.loads(row[7]), *row[8:])
                for row in rows if row[0].startswith(prefix)]

    assert stored("F") == stored("C") and len(stored("F")) == 5
    # Another zone's time stored as UTC, as Core stores it.
    assert [row[12] for row in rows if row[0] == "FSM4"] == [datetime(2026, 12, 2, 19, 30, 5, 123456)]
    # The second batch's senders had their health reset, the other one not; « Arrêt ! » opted out.
    assert health == [(0, True, False), (3, False, True), (0, True, False)]


# --- the writer's checkpoints ------------------------------------------------------------------


def _rows_in_the_file_alone(path: Path, copy: Path) -> int:
    """The messages the database file holds by itself, without its WAL: what checkpoints copied.

    A copy taken while a checkpoint writes pages into the file can be torn; that copy counts as
    "not yet" (-1) and the caller looks again, as it would for a checkpoint still running."""
    shutil.copyfile(path, copy)
    try:
        with contextlib.closing(sqlite3.connect(copy)) as db:
            return int(db.execute("SELECT count(*) FROM inbound_messages").fetchone()[0])
    except sqlite3.DatabaseError:
        return -1


def _wal_size(path: Path) -> int:
    return Path(f"{path}-wal").stat().st_size


# The machine to itself: the timings of the first rounds assume the checkpoint thread gets a core.
@pytest.mark.serial
async def test_the_writer_s_commits_leave_the_wal_to_a_checkpoint_thread_that_starts_it_over(
    tmp_path: Path,
) -> None:
    """A commit that checkpoints made every webhook arriving meanwhile wait (p99 × 4 at 300 req/s):
    the writer's connection never does; its own thread copies the WAL back, and the WAL, all copied,
    is started over rather than growing for as long as webhooks come."""
    path = tmp_path / "bot.db"
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade(url)
    sync = make_sync_engine(url)
    with sync.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
    sync.dispose()
    engine = make_engine(url)
    writer = InboundWriter(engine)
    wal_sizes, stored = [], 0
    try:
        for n in range(3):
            await asyncio.gather(*(writer.submit(webhook(f"SM{n}x{i}", f"+22507{i:08d}", "é" * 1500), NOW)
                                   for i in range(200)))
            await asyncio.sleep(CHECKPOINT_EVERY_S + 0.1)
            await writer.submit(webhook(f"SM{n}last", "+2250799999999"), NOW)  # the next checkpoint
            stored += 201

            async def all_copied(expected: int = stored) -> bool:
                return _rows_in_the_file_alone(path, tmp_path / "copy.db") == expected

            await eventually(all_copied, timeout_s=10)
            wal_sizes.append(_wal_size(path))
        # Webhooks without a pause: the background passes never find the WAL all copied.
        loop = asyncio.get_running_loop()
        began = loop.time()
        for i in range(100_000):
            await writer.submit(webhook(f"SMrun{i}", f"+22507{i % 50:08d}", "é" * 1500), NOW)
            if loop.time() > began + 4.0:
                break
        written, late = i + 1, _wal_size(path)
    finally:
        await writer.close()
        await engine.dispose()
    # Started over after each round: the file is reused, not made three rounds long.
    assert wal_sizes[2] < 1.5 * wal_sizes[0], wal_sizes
    # Bounded: WAL_FRAMES_LIMIT frames of a page each, and what comes while a pass runs.
    assert late < 3 * WAL_FRAMES_LIMIT * (4096 + 24), (written, late)
