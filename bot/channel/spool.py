"""The inbound spool: what Twilio sent while the database did not answer, kept on local disk.

A webhook that cannot be stored within SPOOL_AFTER_S (database down, SQLite locked) is appended,
already validated, to `DATA_DIR/spool/inbound.jsonl` (one JSON line per webhook, fsync'd before
Twilio gets its 200) and replayed in arrival order by a background task of the web server once
the database answers again. Replay is safe to repeat: inbound messages are unique by MessageSid
and status callbacks only move a status forward, so a replay cut short (database gone again,
process killed) simply starts over from the first line of the batch.

While anything is spooled, new webhooks are spooled too, behind it: a user's messages are stored
in the order they came. Replaying first renames the file (`inbound.replaying.jsonl`), so that
webhooks arriving meanwhile go to a new file, replayed next. A torn last line (a crash in the
middle of a write) is skipped with a warning. One web server per DATA_DIR.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

log = logging.getLogger("bot.channel.spool")

SPOOL_FILE = "inbound.jsonl"
REPLAYING_FILE = "inbound.replaying.jsonl"
KINDS = frozenset({"inbound", "status"})


class SpoolFull(Exception):
    """The spool reached SPOOL_MAX_BYTES: the webhook is refused (Twilio retries or falls back)."""


@dataclass(frozen=True)
class SpoolEntry:
    kind: str  # inbound | status
    received_at: datetime
    form: list[tuple[str, str]]


def encode(entry: SpoolEntry) -> bytes:
    if entry.kind not in KINDS:
        raise ValueError(f"unknown spool entry kind {entry.kind!r}")
    record = {"kind": entry.kind, "at": entry.received_at.isoformat(), "form": entry.form}
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def decode(line: bytes) -> SpoolEntry:
    """One line back into an entry; ValueError when it is not one (e.g. torn by a crash)."""
    try:
        record = json.loads(line)
        kind, at, form = record["kind"], datetime.fromisoformat(record["at"]), record["form"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"not a spool entry: {exc}") from None
    if kind not in KINDS or not isinstance(form, list) or at.tzinfo is None:
        raise ValueError("not a spool entry")
    return SpoolEntry(kind=kind, received_at=at, form=[(str(k), str(v)) for k, v in form])


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Spool:
    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.directory = directory
        self.path = directory / SPOOL_FILE
        self.replaying = directory / REPLAYING_FILE
        self.max_bytes = max_bytes
        self._lock = asyncio.Lock()  # appends and the rename keep their order
        self._replay_lock = asyncio.Lock()

    @property
    def pending(self) -> bool:
        """Something waits to be replayed (new webhooks then queue behind it)."""
        return self.replaying.exists() or (self.path.exists() and self.path.stat().st_size > 0)

    async def append(self, entry: SpoolEntry) -> None:
        """Appends one entry and returns once it is on disk."""
        data = encode(entry)
        async with self._lock:
            await asyncio.to_thread(self._write, data)

    def _write(self, data: bytes) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        size = sum(p.stat().st_size for p in (self.path, self.replaying) if p.exists())
        if size + len(data) > self.max_bytes:
            raise SpoolFull(f"the spool holds {size} bytes (SPOOL_MAX_BYTES={self.max_bytes})")
        new = not self.path.exists()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(f"short write to the spool ({written} of {len(data)} bytes)")
            os.fsync(fd)
        finally:
            os.close(fd)
        if new:
            _fsync_dir(self.directory)  # the file's name is durable too

    def read(self, path: Path) -> list[SpoolEntry]:
        entries: list[SpoolEntry] = []
        if not path.exists():
            return entries
        for number, line in enumerate(path.read_bytes().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                entries.append(decode(line))
            except ValueError as exc:
                log.warning("spool line skipped", extra={"line": number, "error": str(exc)})
        return entries

    async def replay(self, handle: Callable[[SpoolEntry], Awaitable[None]]) -> int:
        """Hands every entry to `handle`, in order, and forgets them once all were handled.

        Raises what `handle` raises; the entries stay and the next replay starts over."""
        done = 0
        async with self._replay_lock:
            while True:
                async with self._lock:
                    if not self.replaying.exists():
                        if not self.path.exists():
                            return done
                        os.replace(self.path, self.replaying)
                        await asyncio.to_thread(_fsync_dir, self.directory)
                for entry in self.read(self.replaying):
                    await handle(entry)
                    done += 1
                self.replaying.unlink()
                await asyncio.to_thread(_fsync_dir, self.directory)
                log.info("spool replayed", extra={"entries": done})
