"""The inbound spool: what Twilio sent while the database did not answer, kept on local disk.

A webhook that cannot be stored within SPOOL_AFTER_S (database down, SQLite locked) is appended,
already validated, to `DATA_DIR/spool/inbound.jsonl` and replayed in arrival order by a background
task of the web server once the database answers again. Each entry is one line written by one
`write`: `<length> <crc32 hex> <json>\\n`, fsync'd before Twilio gets its 200. A short or failed
write is truncated away and not acknowledged (503: Twilio retries). Replay is safe to repeat:
inbound messages are unique by MessageSid and status callbacks only move a status forward, so a
replay cut short (database gone again, process killed) simply starts over from the first line.

While anything is spooled, new webhooks are spooled too, behind it: a user's messages are stored
in the order they came. Replaying first renames the file (`inbound.replaying.jsonl`), so that
webhooks arriving meanwhile go to a new file, replayed next.

Nothing blocks what is behind it. Bytes that are no whole entry (a crash in the middle of a write:
wrong length or checksum) are set aside, and the next entry is read from where it starts. An entry
the database refuses SPOOL_MAX_ATTEMPTS times (counted only when the caller says the failure is
the entry's, not an outage) is set aside too. Set aside means appended to `dead.jsonl`, logged at
ERROR and counted (deblo_spool_dead_total); `python -m bot spool retry` replays those entries.
Lines of the format before the header (a bare JSON line) are still read. One web server per DATA_DIR.

An erasure (`users forget`, SUPPRIMER) takes the person's entries out of every spool file
(`forget`), and their number out of other people's. The files change under one lock of the host
(`flock` on `spool.lock`), since the console that erases is another process than the web server
that appends, renames and rewrites them. An entry the replay already holds in memory at that
moment is not stored either: the erasure is recorded (bot.storage.erasures) and checked before
a spooled webhook is stored.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fcntl
import json
import logging
import os
import re
import zlib
from collections.abc import Awaitable, Callable, Collection, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bot import metrics

log = logging.getLogger("bot.channel.spool")

SPOOL_FILE = "inbound.jsonl"
REPLAYING_FILE = "inbound.replaying.jsonl"
DEAD_FILE = "dead.jsonl"
RETRYING_FILE = "dead.retrying.jsonl"
LOCK_FILE = "spool.lock"
# The fields that name whom a webhook is from or to (an inbound's From, a status's To).
ADDRESS_FIELDS = frozenset({"From", "To", "WaId", "ExternalUserId"})
KINDS = frozenset({"inbound", "status"})
_HEADER = re.compile(rb"([0-9]{1,10}) ([0-9a-f]{8}) ")


class SpoolFull(Exception):
    """The spool reached SPOOL_MAX_BYTES: the webhook is refused (Twilio retries or falls back)."""


@dataclass(frozen=True)
class SpoolEntry:
    kind: str  # inbound | status
    received_at: datetime
    form: list[tuple[str, str]]


def frame(payload: bytes) -> bytes:
    """One spool line: the payload's length and CRC-32 before it, so a torn line is seen."""
    return b"%d %08x %s\n" % (len(payload), zlib.crc32(payload), payload)


def entry_addresses(entry: SpoolEntry) -> set[str]:
    """The numbers and WhatsApp ids the webhook is from or to (ours among them), as users hold them."""
    found: set[str] = set()
    for name, value in entry.form:
        address = value.strip().removeprefix("whatsapp:")
        if name in ADDRESS_FIELDS and address:
            found.add("+" + address if name == "WaId" and address.isdigit() else address)
    return found


def _record(entry: SpoolEntry) -> dict[str, object]:
    return {"kind": entry.kind, "at": entry.received_at.isoformat(), "form": entry.form}


def encode(entry: SpoolEntry) -> bytes:
    if entry.kind not in KINDS:
        raise ValueError(f"unknown spool entry kind {entry.kind!r}")
    return frame(json.dumps(_record(entry), ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _entry_of(record: object) -> SpoolEntry:
    if not isinstance(record, dict):
        raise ValueError("not a spool entry")
    try:
        kind, at, form = record["kind"], datetime.fromisoformat(record["at"]), record["form"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"not a spool entry: {exc}") from None
    if kind not in KINDS or not isinstance(form, list) or at.tzinfo is None:
        raise ValueError("not a spool entry")
    return SpoolEntry(kind=kind, received_at=at, form=[(str(k), str(v)) for k, v in form])


def decode(payload: bytes) -> SpoolEntry:
    """One entry's JSON back into an entry; ValueError when it is not one."""
    try:
        record = json.loads(payload)
    except ValueError as exc:
        raise ValueError(f"not a spool entry: {exc}") from None
    return _entry_of(record)


def _frame_at(data: bytes, pos: int) -> tuple[bytes, int] | None:
    """The payload of the whole line starting at `pos` and the position after it, or None."""
    match = _HEADER.match(data, pos)
    if match is None:
        return None
    start = match.end()
    end = start + int(match[1])
    if data[end:end + 1] != b"\n" or zlib.crc32(data[start:end]) != int(match[2], 16):
        return None
    return data[start:end], end + 1


def _resync(data: bytes, pos: int) -> int:
    """Where the next record may start after bytes that are none: a whole line inside them, or
    else the start of the next line."""
    newline = data.find(b"\n", pos)
    line_end = len(data) if newline < 0 else newline + 1
    for match in _HEADER.finditer(data, pos + 1, line_end):
        if _frame_at(data, match.start()) is not None:
            return match.start()
    return line_end


def records(data: bytes) -> Iterator[tuple[bytes, SpoolEntry | None, str]]:
    """(raw bytes, entry, why not) for each record of a spool file; entry None for bytes that are
    no entry (set aside), the next record read from where it starts."""
    pos = 0
    while pos < len(data):
        if data[pos:pos + 1] in (b"\n", b"\r", b" "):
            pos += 1
            continue
        framed = _frame_at(data, pos)
        payload, end, why = None, 0, ""
        if framed is not None:
            payload, end = framed
        elif data[pos:pos + 1] == b"{":  # a line written before the header existed
            newline = data.find(b"\n", pos)
            end = len(data) if newline < 0 else newline + 1
            payload = data[pos:end].rstrip(b"\r\n")
        if payload is not None:
            try:
                yield data[pos:end], decode(payload), ""
                pos = end
                continue
            except ValueError as exc:
                why = str(exc)
        end = _resync(data, pos)
        yield data[pos:end], None, why or "torn line (length or checksum does not match)"
        pos = end


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """The host's lock of the spool's files (it blocks: taken in a thread, never on the loop)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK_FILE, "ab") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield  # closing the file lets go


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _append(path: Path, data: bytes) -> None:
    """Appends `data` with one write and fsyncs it; on a short or failed write, the file is cut
    back to where it was and OSError raised (nothing half-written stays)."""
    new = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        before = os.fstat(fd).st_size
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(f"short write to {path.name} ({written} of {len(data)} bytes)")
            os.fsync(fd)
        except OSError:
            os.ftruncate(fd, before)
            raise
    finally:
        os.close(fd)
    if new:
        _fsync_dir(path.parent)  # the file's name is durable too


def _rewrite(path: Path, data: bytes) -> None:
    """Replaces the file's content atomically (the rest of a batch, once some was set aside)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def dead_record(raw: bytes, entry: SpoolEntry | None, reason: str) -> bytes:
    """One line of dead.jsonl: the entry when there is one (to replay), else the raw bytes."""
    record: dict[str, object] = {"reason": reason[:500], "dead_at": datetime.now(UTC).isoformat()}
    if entry is not None:
        record["entry"] = _record(entry)
    else:
        record["raw"] = base64.b64encode(raw).decode("ascii")
    return frame(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


# A failure of `handle`: True when it is the entry's own (counted towards SPOOL_MAX_ATTEMPTS).
Refused = Callable[[BaseException], Awaitable[bool]]
# Stores an entry; False when it was dropped instead (its number was erased since).
Handle = Callable[[SpoolEntry], Awaitable[bool | None]]


class Spool:
    def __init__(self, directory: Path, max_bytes: int, max_attempts: int = 5) -> None:
        self.directory = directory
        self.path = directory / SPOOL_FILE
        self.replaying = directory / REPLAYING_FILE
        self.dead = directory / DEAD_FILE
        self.max_bytes = max_bytes
        self.max_attempts = max_attempts
        self._attempts: dict[bytes, int] = {}  # the entry's raw line -> failures counted against it
        self._lock = asyncio.Lock()  # appends and the rename keep their order
        self._replay_lock = asyncio.Lock()
        # False once the disk showed nothing to replay; only `append` makes it True again (one web
        # server per DATA_DIR), so the webhook asks the disk only while something may be spooled.
        self._maybe_pending = True

    @property
    def pending(self) -> bool:
        """Something waits to be replayed (new webhooks then queue behind it)."""
        return self._maybe_pending and self.look()

    def look(self) -> bool:
        """`pending` as the disk says now, whatever this process wrote (a file put there by hand
        is seen at the replayer's next look)."""
        found = self.replaying.exists() or (self.path.exists() and self.path.stat().st_size > 0)
        self._maybe_pending = found
        return found

    async def append(self, entry: SpoolEntry) -> None:
        """Appends one entry and returns once it is on disk."""
        data = encode(entry)
        self._maybe_pending = True
        async with self._lock:
            await asyncio.to_thread(self._write, data)

    def _write(self, data: bytes) -> None:
        with _locked(self.directory):
            size = sum(p.stat().st_size for p in (self.path, self.replaying) if p.exists())
            if size + len(data) > self.max_bytes:
                raise SpoolFull(f"the spool holds {size} bytes (SPOOL_MAX_BYTES={self.max_bytes})")
            _append(self.path, data)

    def _set_aside(self, raw: bytes, entry: SpoolEntry | None, reason: str) -> None:
        """Appends to dead.jsonl; the caller holds the lock."""
        _append(self.dead, dead_record(raw, entry, reason))
        metrics.SPOOL_DEAD.inc()
        log.error("spool entry set aside in %s", DEAD_FILE,
                  extra={"reason": reason[:300], "kind": entry.kind if entry else None, "bytes": len(raw)})

    def _load(self, path: Path) -> list[tuple[bytes, SpoolEntry]]:
        """The entries of `path`; what is no entry is set aside, and the file rewritten without
        it (so that it is set aside once)."""
        with _locked(self.directory):
            if not path.exists():
                return []
            found = list(records(path.read_bytes()))
            for raw, entry, why in found:
                if entry is None:
                    self._set_aside(raw, None, why)
            good = [(raw, entry) for raw, entry, _ in found if entry is not None]
            if len(good) < len(found):
                _rewrite(path, b"".join(raw for raw, _ in good))
            return good

    def _begin_replay(self) -> bool:
        """The spool renamed to the replaying file (unless one is left from before); False when
        nothing waits."""
        with _locked(self.directory):
            if not self.replaying.exists():
                if not self.path.exists():
                    return False
                os.replace(self.path, self.replaying)
                _fsync_dir(self.directory)
            return True

    def _set_aside_in_replay(self, raw: bytes, entry: SpoolEntry, reason: str, rest: bytes) -> None:
        with _locked(self.directory):
            self._set_aside(raw, entry, reason)
            _rewrite(self.replaying, rest)

    def _end_replay(self) -> None:
        with _locked(self.directory):
            self.replaying.unlink(missing_ok=True)
            _fsync_dir(self.directory)

    def read(self, path: Path) -> list[SpoolEntry]:
        return [entry for _, entry in self._load(path)]

    async def _give_up(self, raw: bytes, exc: BaseException, refused: Refused | None) -> bool:
        """True when the entry is to be set aside: SPOOL_MAX_ATTEMPTS failures of its own."""
        if refused is not None and not await refused(exc):
            return False  # the database is away: no entry's fault
        self._attempts[raw] = self._attempts.get(raw, 0) + 1
        return self._attempts[raw] >= self.max_attempts

    async def replay(self, handle: Handle, refused: Refused | None = None) -> int:
        """Hands every entry to `handle`, in order, and forgets them once all were handled.

        Raises what `handle` raises; the entries stay and the next replay starts over, except an
        entry refused SPOOL_MAX_ATTEMPTS times (`refused` says whether a failure is the entry's;
        without it, every failure is), which is set aside and the ones behind it replayed."""
        done = 0
        async with self._replay_lock:
            while True:
                async with self._lock:
                    if not await asyncio.to_thread(self._begin_replay):
                        self._attempts.clear()
                        return done
                batch = await asyncio.to_thread(self._load, self.replaying)
                for index, (raw, entry) in enumerate(batch):
                    try:
                        await handle(entry)
                    except Exception as exc:
                        if not await self._give_up(raw, exc, refused):
                            raise
                        self._attempts.pop(raw, None)
                        rest = b"".join(r for r, _ in batch[index + 1:])
                        await asyncio.to_thread(self._set_aside_in_replay, raw, entry, _reason(exc), rest)
                        continue
                    done += 1
                await asyncio.to_thread(self._end_replay)
                log.info("spool replayed", extra={"entries": done})

    def _begin_retry(self, retrying: Path) -> bytes | None:
        with _locked(self.directory):
            if self.dead.exists() and not retrying.exists():
                os.replace(self.dead, retrying)  # the server may set aside more meanwhile: a new file
            return retrying.read_bytes() if retrying.exists() else None

    def _end_retry(self, retrying: Path, kept: list[bytes]) -> None:
        with _locked(self.directory):
            if kept:
                _append(self.dead, b"".join(kept))
            retrying.unlink(missing_ok=True)

    async def retry_dead(self, handle: Handle) -> tuple[int, int, int]:
        """Hands every set-aside entry to `handle` once: (stored, dropped as of an erased number,
        still dead). What fails again, and bytes that were no entry, go back to dead.jsonl (after
        what was set aside meanwhile)."""
        retrying = self.directory / RETRYING_FILE
        data = await asyncio.to_thread(self._begin_retry, retrying) if self.directory.is_dir() else None
        if data is None:
            return 0, 0, 0
        stored, dropped, kept = 0, 0, []
        for raw, record in _dead_records(data):
            entry = _dead_entry(record)
            if entry is not None:
                try:
                    if await handle(entry) is False:
                        dropped += 1
                    else:
                        stored += 1
                    continue
                except Exception as exc:
                    log.error("set-aside spool entry still not stored", extra={"error": _reason(exc)[:300]})
            kept.append(raw)
        await asyncio.to_thread(self._end_retry, retrying, kept)
        return stored, dropped, len(kept)


def _reason(exc: BaseException) -> str:
    """The error's class and first line: not the statement's parameters (a user's message)."""
    lines = str(exc).splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def _dead_records(data: bytes) -> Iterator[tuple[bytes, dict[str, object] | None]]:
    pos = 0
    while pos < len(data):
        framed = _frame_at(data, pos)
        if framed is None:  # never written torn (one write each): kept as it is
            end = _resync(data, pos)
            yield data[pos:end], None
            pos = end
            continue
        payload, end = framed
        try:
            record = json.loads(payload)
        except ValueError:
            record = None
        yield data[pos:end], record if isinstance(record, dict) else None
        pos = end


def _dead_entry(record: dict[str, object] | None) -> SpoolEntry | None:
    if record is None or "entry" not in record:
        return None
    try:
        return _entry_of(record["entry"])
    except ValueError:
        return None


# --- an erasure -------------------------------------------------------------------------------


def forget(directory: Path, addresses: Collection[str | None], mask: str) -> int:
    """Takes the entries from or to these addresses (a number, a WhatsApp id) out of every spool
    file (waiting, being replayed, set aside, being retried, a rewrite cut short), and writes `mask`
    where other people's entries quote them; returns how many entries went. It blocks: run it in
    a thread."""
    wanted = {a for a in addresses if a}
    if not wanted or not directory.is_dir():
        return 0
    removed = 0
    with _locked(directory):
        for path in sorted(directory.iterdir()):
            if path.name == LOCK_FILE or not path.is_file():
                continue
            data = path.read_bytes()
            kept = [_scrubbed(raw, record, wanted, mask) for raw, record in _dead_records(data)]
            removed += sum(k is None for k in kept)
            new = b"".join(k for k in kept if k is not None)
            if new != data:
                _rewrite(path, new)
    return removed


def _scrubbed(raw: bytes, record: dict[str, object] | None, wanted: set[str], mask: str) -> bytes | None:
    """The record as it stays: None when it is the person's, else without their addresses."""
    if record is None and raw.startswith(b"{"):  # a line of the format before the header
        with contextlib.suppress(ValueError):
            parsed = json.loads(raw)
            record = parsed if isinstance(parsed, dict) else None
    try:  # an entry waiting (inbound*.jsonl) or set aside (dead*.jsonl)
        entry = _entry_of(record.get("entry", record) if record is not None else None)
    except ValueError:
        blob = raw  # bytes that are no entry, set aside as they were: kept unless they name the person
        if record is not None and isinstance(record.get("raw"), str):
            with contextlib.suppress(ValueError):
                blob += base64.b64decode(str(record["raw"]))
        return None if any(a.encode() in blob for a in wanted) else raw
    if entry_addresses(entry) & wanted:
        return None
    form = [(name, _masked(value, wanted, mask)) for name, value in entry.form]
    if form == entry.form:
        return raw
    clean = SpoolEntry(entry.kind, entry.received_at, form)
    if record is None or "entry" not in record:
        return encode(clean)
    dead = {**record, "entry": _record(clean)}
    return frame(json.dumps(dead, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _masked(value: str, wanted: set[str], mask: str) -> str:
    for address in wanted:
        value = value.replace(address, mask)
    return value
