"""What an inbound webhook says, who sent it, and the durable record of it.

One user per person: the same E.164 number over WhatsApp and SMS is one user. When WhatsApp hides
the number, Twilio sends the business-scoped user id (BSUID) as `ExternalUserId`, and `From` may
itself be `whatsapp:<CC>.<digits>`; the BSUID then identifies the user and the number, when known,
stays an alias.

Text is cleaned at the door (`clean_form`, before anything is stored or spooled): NUL and the other
C0 control characters but tab, LF and CR are removed, and what is not valid Unicode (a lone
surrogate) is replaced, so that no field of a webhook can be refused by the database (PostgreSQL
takes no NUL in text or JSON) and block what comes behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import re
import time
from collections import deque
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import phonenumbers
from sqlalchemy import Connection, Engine, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.channel import inbound_store as store
from bot.channel.inbound_store import InboundParams
from bot.channel.locale import Locale
from bot.channel.metering import rates_or_none
from bot.storage import counting
from bot.storage.db import make_sync_engine

log = logging.getLogger("bot.channel.inbound")

_BSUID = re.compile(r"^[A-Z]{2}\.[0-9A-Za-z]{4,}$")
_SID = re.compile(r"[A-Za-z0-9_-]+")
MAX_MEDIA = 10
# C0 control characters but tab (\x09), LF (\x0a) and CR (\x0d): never meant in a message, and NUL
# is refused by PostgreSQL.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
_SURROGATE = re.compile("[\ud800-\udfff]")  # not Unicode: no UTF-8 for it


class MalformedWebhook(ValueError):
    pass


@functools.lru_cache(maxsize=65536)
def normalise_phone(raw: str) -> str | None:
    """E.164 form of a number written with its country code, else None."""
    raw = raw.strip()
    if not raw:
        return None
    if not raw.startswith("+"):
        raw = "+" + raw if raw.isdigit() else raw
    try:
        number = phonenumbers.parse(raw, None)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_possible_number(number):
        return None
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def _strip_channel(addr: str) -> str:
    return addr.split(":", 1)[1] if addr.startswith("whatsapp:") else addr


def clean_text(value: str) -> str:
    """`value` without C0 control characters (but tab, LF, CR), a lone surrogate replaced."""
    value = _CONTROL.sub("", value)
    return value if value.isascii() else _SURROGATE.sub("\ufffd", value)


# A control character in a form body, as itself or percent-encoded: the body's fields need
# `clean_text` only then (a body decoded strictly as UTF-8 holds no lone surrogate). Two C scans:
# one regex alternating a class with `%` was tried at every byte, ten times slower.
_CONTROL_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20)])
_ESCAPED_CONTROL = re.compile(rb"%(?:0[0-8bBcCeEfF]|1[0-9a-fA-F])")


def has_control(raw: bytes) -> bool:
    """Whether a urlencoded body may decode to a field `clean_text` changes."""
    if len(raw.translate(None, _CONTROL_BYTES)) != len(raw):
        return True
    return _ESCAPED_CONTROL.search(raw) is not None


def clean_form(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Every name and value of a (checked) form cleaned by `clean_text`, in order."""
    return [(clean_text(name), clean_text(value)) for name, value in pairs]


def parse_params(form: Mapping[str, str]) -> InboundParams:
    sid = (form.get("MessageSid") or form.get("SmsMessageSid") or "").strip()
    from_addr = (form.get("From") or "").strip()
    if not sid:
        raise MalformedWebhook("no MessageSid")
    if not from_addr:
        raise MalformedWebhook("no From")
    if len(sid) > 64 or not _SID.fullmatch(sid):
        raise MalformedWebhook("bad MessageSid")
    channel = "whatsapp" if from_addr.startswith("whatsapp:") else "sms"
    sender = _strip_channel(from_addr)
    external = _strip_channel((form.get("ExternalUserId") or "").strip()) or None
    phone: str | None = None
    if _BSUID.match(sender):
        external = external or sender
    else:
        phone = normalise_phone(sender)
        if phone is None and form.get("WaId"):
            phone = normalise_phone(form["WaId"])
        if phone is None:
            raise MalformedWebhook("From is not a phone number")
    if external is not None and not _BSUID.match(external):
        external = None  # an id we do not understand is no identity
    try:
        num_media = min(int(form.get("NumMedia") or 0), MAX_MEDIA)
    except ValueError:
        raise MalformedWebhook("bad NumMedia") from None
    media = []
    for i in range(num_media):
        url = form.get(f"MediaUrl{i}")
        if url:
            media.append({"url": url, "content_type": form.get(f"MediaContentType{i}") or ""})
    profile = (form.get("ProfileName") or "").strip()[:200] or None
    return InboundParams(
        message_sid=sid,
        channel=channel,
        from_addr=from_addr[:160],
        to_addr=(form.get("To") or "")[:160],
        body=form.get("Body") or "",
        phone=phone,
        external_id=external,
        profile_name=profile,
        media=media,
        params=dict(form),
    )


@dataclass
class _Pending:
    params: InboundParams
    now: datetime
    future: asyncio.Future[tuple[int, int | None]]


class InboundWriter:
    """Stores accepted webhooks durably, many per transaction (group commit).

    Each webhook waits until its own row is committed before Twilio gets its 200, so nothing is
    acknowledged that could be lost; but requests arriving together share one transaction, which
    keeps the time to the 200 low under load (SQLite has one writer). Senders seen recently are
    remembered (id, number, BSUID, name) so that a known user costs no lookup. A new number gets
    its country's time zone and language, else `defaults` (bot.channel.locale). What one batch
    writes is bot.channel.inbound_store's; on a SQLite file it runs in the writer's own thread over
    its own connection, one hop per batch; on PostgreSQL a batch of known senders with no STOP is
    one prepared statement, its own transaction: one round trip.
    """

    def __init__(self, engine: AsyncEngine, *, defaults: Locale = Locale("Africa/Abidjan", "fr"),
                 max_batch: int = 200, cache_size: int = 50_000, rates_file: str | None = None) -> None:
        self.engine = engine
        self.max_batch = max_batch
        self._cache = store.UserCache(cache_size)
        self._batch = store.Batch(store.statements(engine.dialect.name), self._cache, defaults,
                                  rates_or_none(rates_file))
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._conn: AsyncConnection | None = None
        self._prepared: tuple[Any, Any] | None = None  # (driver connection, its prepared statement)
        self._thread: _SqliteThread | None = _SqliteThread.for_engine(engine)
        # (deadline, future) of submits given a time limit, oldest first, and the one timer that
        # watches the oldest: a timer per webhook would cost more than its row's share of the batch.
        self._deadlines: deque[tuple[float, asyncio.Future[tuple[int, int | None]]]] = deque()
        self._timer: asyncio.TimerHandle | None = None

    async def submit(self, params: InboundParams, now: datetime,
                     within: float | None = None) -> tuple[int, int | None]:
        """(user id, inbound row id) once committed; the row id is None for a MessageSid seen before.
        With `within`, TimeoutError when not committed within that many seconds (the row may still
        be written later: MessageSid is unique, so storing it again elsewhere is harmless)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="inbound-writer")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[int, int | None]] = loop.create_future()
        self._queue.put_nowait(_Pending(params, now, future))
        if within is not None:
            self._watch(loop, loop.time() + within, future)
        return await future

    def _watch(self, loop: asyncio.AbstractEventLoop, deadline: float,
               future: asyncio.Future[tuple[int, int | None]]) -> None:
        while self._deadlines and self._deadlines[0][1].done():
            self._deadlines.popleft()
        self._deadlines.append((deadline, future))
        if self._timer is None:
            self._timer = loop.call_at(deadline, self._expire)

    def _expire(self) -> None:
        """Fails the submits past their deadline, then waits for the oldest one left."""
        self._timer = None
        now = asyncio.get_running_loop().time()
        while self._deadlines and (self._deadlines[0][1].done() or self._deadlines[0][0] <= now):
            _, future = self._deadlines.popleft()
            if not future.done():
                future.set_exception(TimeoutError("inbound message not stored in time"))
        if self._deadlines:
            self._timer = asyncio.get_running_loop().call_at(self._deadlines[0][0], self._expire)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._drop_connection()
        if self._thread is not None:
            await self._thread.close()

    async def _drop_connection(self) -> None:
        if self._thread is not None:
            await self._thread.drop()
        self._prepared = None
        if self._conn is not None:
            conn, self._conn = self._conn, None
            try:
                await conn.close()
            except Exception:
                log.warning("inbound writer connection did not close cleanly")

    async def _run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < self.max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                results = await self._write(batch)
            except Exception:
                # One bad message must not fail the others: write them one by one.
                self._cache.clear()
                await self._drop_connection()
                for item in batch:
                    try:
                        [result] = await self._write([item])
                    except Exception as exc:
                        await self._drop_connection()
                        log.exception("inbound message not stored",
                                      extra={"message_sid": item.params.message_sid})
                        if not item.future.done():
                            item.future.set_exception(exc)
                        continue
                    if not item.future.done():
                        item.future.set_result(result)
                continue
            for item, result in zip(batch, results, strict=True):
                if not item.future.done():
                    item.future.set_result(result)

    async def _write(self, batch: list[_Pending]) -> list[tuple[int, int | None]]:
        items = [(item.params, item.now) for item in batch]
        if self._thread is not None:
            return await self._thread.write(self._batch, items)
        # One connection kept for the writer: no pool checkout and reset per batch.
        if self._conn is None or self._conn.closed:
            self._conn = await self.engine.connect()
        if self.engine.dialect.name == "postgresql" and (one := store.one_statement(self._batch, items)):
            return await self._write_one_statement(items, *one)
        async with self._conn.begin():
            return await self._conn.run_sync(store.write_batch, self._batch, items)

    async def _write_one_statement(self, items: store.Items, users: list[store.KnownUser],
                                   args: tuple[Any, ...]) -> list[tuple[int, int | None]]:
        """PostgreSQL's usual batch: one prepared statement on the driver's connection, outside any
        transaction of SQLAlchemy's, so that it is its own (store.PG_ONE_STATEMENT)."""
        assert self._conn is not None
        driver = (await self._conn.get_raw_connection()).driver_connection
        assert driver is not None  # a connection checked out and open
        if self._prepared is None or self._prepared[0] is not driver:
            self._prepared = (driver, await driver.prepare(store.PG_ONE_STATEMENT))
        rows = await self._prepared[1].fetch(*args)
        counting.note(transactions=1, statements=1)
        return store.results(items, users, {row[1]: row[0] for row in rows})


# How often, at most, the WAL is copied back into the database file while webhooks are written.
CHECKPOINT_EVERY_S = 0.5
CHECKPOINT_PASSES = 20
# Past this many frames (about 16 MB of WAL), the writer finishes a checkpoint itself (see _write).
WAL_FRAMES_LIMIT = 4000
_WAL_FRAME_BYTES = 4096 + 24  # a page (SQLite's default size, which the database keeps) and its header


class _SqliteThread:
    """The writer's own SQLite connection, used from one thread only: a batch is one hop there.

    Its commits never checkpoint (bot.storage.db.make_sync_engine): left to SQLite, the commit that
    takes the WAL past 1,000 pages copies it back into the database file and syncs it, some 15 ms
    every 250 webhooks, and every webhook arriving meanwhile waits (p99 at 300 req/s: 11 ms with
    it, 2.6 ms without). Passive checkpoints run instead in a thread and connection of their own, at
    most every CHECKPOINT_EVERY_S after a write: SQLite lets the writer go on beside them. Only when
    they cannot keep up (past WAL_FRAMES_LIMIT) does the writer finish one itself (_write)."""

    def __init__(self, database_url: str) -> None:
        self._engine: Engine = make_sync_engine(database_url)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inbound-writer")
        self._conn: Connection | None = None
        self._closed = False
        self._checkpointer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inbound-checkpoint")
        self._checkpointing: Future[None] | None = None
        self._checkpointed_at = 0.0
        self._finish = False  # whether the writer is to finish the last checkpoint (see _write)
        self._path = make_url(database_url).database or ""
        self._wal_high = 0  # the WAL file's largest size seen past the limit (_wal_outgrown)

    @classmethod
    def for_engine(cls, engine: AsyncEngine) -> _SqliteThread | None:
        if engine.dialect.name != "sqlite" or engine.url.database in (None, "", ":memory:"):
            return None  # an in-memory database is only the async engine's own
        return cls(engine.url.render_as_string(hide_password=False))

    async def write(self, how: store.Batch,
                    items: store.Items) -> list[tuple[int, int | None]]:
        loop = asyncio.get_running_loop()
        written = await loop.run_in_executor(self._executor, self._write, how, items)
        self._checkpoint_soon()
        return written

    def _checkpoint_soon(self) -> None:
        now = time.monotonic()
        running = self._checkpointing is not None and not self._checkpointing.done()
        if running or self._closed or now - self._checkpointed_at < CHECKPOINT_EVERY_S:
            return
        self._checkpointed_at = now
        self._checkpointing = self._checkpointer.submit(self._checkpoint)

    def _checkpoint(self) -> None:
        """Copies the WAL into the database file, pass after pass until one finds nothing written
        since the one before: the WAL is then all copied, and the next write starts it over instead
        of making it longer. (A pass reports the WAL as it was when it began: "all copied" alone
        does not say that nothing was written meanwhile.) Each pass after the first is short."""
        try:
            with contextlib.closing(self._engine.raw_connection()) as conn:
                seen = -1
                for _ in range(CHECKPOINT_PASSES):
                    _busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    if self._closed or frames <= 0 or (frames == seen and copied >= frames):
                        return
                    if frames > WAL_FRAMES_LIMIT:
                        self._finish = True
                        return
                    seen = frames
        except Exception:
            # Nothing is lost: the WAL keeps the rows, and the next checkpoint copies them.
            log.warning("inbound writer checkpoint failed", exc_info=True)

    def _wal_outgrown(self) -> bool:
        """The WAL file grew past WAL_FRAMES_LIMIT frames and past its largest size so far: no
        background pass started it over meanwhile (a starved or slow checkpoint thread). A WAL started
        over is reused from its beginning and its file keeps its size, so this is rare."""
        try:
            size = os.path.getsize(f"{self._path}-wal")
        except OSError:
            return False
        if size <= max(self._wal_high, WAL_FRAMES_LIMIT * _WAL_FRAME_BYTES):
            return False
        self._wal_high = size
        return True

    def _write(self, how: store.Batch, items: store.Items) -> list[tuple[int, int | None]]:
        if self._conn is None or self._conn.closed:
            self._conn = self._engine.connect()
        outgrown = bool(self._path) and self._wal_outgrown()
        if outgrown or (self._finish and (self._checkpointing is None or self._checkpointing.done())):
            # Webhooks without a pause: every background pass finds new frames, the WAL is never
            # all copied and only grows. The only writer finishes the copy here, between two batches
            # (short: the pass that just ended copied the bulk), and its write below starts the WAL
            # over.
            self._finish = False
            raw = self._conn.connection.driver_connection
            assert raw is not None  # a connection just checked out
            try:
                raw.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except Exception:  # the batch is what matters; the next pass copies the rest
                log.warning("inbound writer checkpoint failed", exc_info=True)
        with self._conn.begin():
            return store.write_batch(self._conn, how, items)

    async def drop(self) -> None:
        if self._closed:  # closed already (an app cleaned up twice): nothing is left to drop
            return
        await asyncio.get_running_loop().run_in_executor(self._executor, self._drop)

    def _drop(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            try:
                conn.close()
            except Exception:
                log.warning("inbound writer connection did not close cleanly")

    async def close(self) -> None:
        if self._closed:
            return
        await self.drop()
        self._closed = True
        if self._checkpointing is not None:
            await asyncio.wrap_future(self._checkpointing)
        self._checkpointer.shutdown(wait=False)
        self._engine.dispose()
        self._executor.shutdown(wait=False)
