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
import functools
import logging
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import phonenumbers
from sqlalchemy import or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.channel.keywords import is_stop
from bot.channel.locale import Locale, locale_for
from bot.storage.models import InboundMessage, User

log = logging.getLogger("bot.channel.inbound")

_BSUID = re.compile(r"^[A-Z]{2}\.[0-9A-Za-z]{4,}$")
MAX_MEDIA = 10
# C0 control characters but tab (\x09), LF (\x0a) and CR (\x0d): never meant in a message, and NUL
# is refused by PostgreSQL.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
_SURROGATE = re.compile("[\ud800-\udfff]")  # not Unicode: no UTF-8 for it


class MalformedWebhook(ValueError):
    pass


@dataclass
class InboundParams:
    message_sid: str
    channel: str  # whatsapp | sms
    from_addr: str
    to_addr: str
    body: str
    phone: str | None  # E.164 when the sender's number is known
    external_id: str | None  # WhatsApp BSUID
    profile_name: str | None
    media: list[dict[str, str]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)


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
    if len(sid) > 64 or not re.fullmatch(r"[A-Za-z0-9_-]+", sid):
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
class KnownUser:
    id: int
    phone: str | None
    external_id: str | None
    display_name: str | None


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
    its country's time zone and language, else `defaults` (bot.channel.locale).
    """

    def __init__(self, engine: AsyncEngine, *, defaults: Locale = Locale("Africa/Abidjan", "fr"),
                 max_batch: int = 200, cache_size: int = 50_000) -> None:
        self.engine = engine
        self.defaults = defaults
        self.max_batch = max_batch
        self.cache_size = cache_size
        self._known: OrderedDict[str, KnownUser] = OrderedDict()
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._conn: AsyncConnection | None = None
        dialect = engine.dialect.name
        self._insert = pg_insert if dialect == "postgresql" else sqlite_insert

    async def submit(self, params: InboundParams, now: datetime) -> tuple[int, int | None]:
        """(user id, inbound row id) once committed; the row id is None for a MessageSid seen before."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="inbound-writer")
        future: asyncio.Future[tuple[int, int | None]] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Pending(params, now, future))
        return await future

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._drop_connection()

    async def _connection(self) -> AsyncConnection:
        # One connection kept for the writer: no pool checkout and reset per batch.
        if self._conn is None or self._conn.closed:
            self._conn = await self.engine.connect()
        return self._conn

    async def _drop_connection(self) -> None:
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
                self._known.clear()
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

    # --- users ---------------------------------------------------------------------------------
    def _remember(self, user: KnownUser) -> None:
        keys = [f"p:{user.phone}" if user.phone else "", f"x:{user.external_id}" if user.external_id else ""]
        for key in filter(None, keys):
            self._known[key] = user
            self._known.move_to_end(key)
        while len(self._known) > self.cache_size:
            self._known.popitem(last=False)

    def _lookup(self, p: InboundParams) -> KnownUser | None:
        if p.external_id and f"x:{p.external_id}" in self._known:
            return self._known[f"x:{p.external_id}"]
        if p.phone and f"p:{p.phone}" in self._known:
            found = self._known[f"p:{p.phone}"]
            # A BSUID we have not seen for this number may belong to another account: look it up.
            if not p.external_id or found.external_id in (None, p.external_id):
                return found
        return None

    async def _load(self, conn: AsyncConnection, phones: set[str], externals: set[str]) -> None:
        users = User.__table__
        conditions = []
        if phones:
            conditions.append(users.c.phone.in_(phones))
        if externals:
            conditions.append(users.c.external_id.in_(externals))
        if not conditions:
            return
        columns = (users.c.id, users.c.phone, users.c.external_id, users.c.display_name)
        rows = await conn.execute(select(*columns).where(or_(*conditions)))
        for row in rows:
            self._remember(KnownUser(row.id, row.phone, row.external_id, row.display_name))

    async def _resolve(self, conn: AsyncConnection, batch: list[_Pending]) -> list[KnownUser]:
        users = User.__table__
        missing = [item for item in batch if self._lookup(item.params) is None]
        if missing:
            await self._load(conn, {i.params.phone for i in missing if i.params.phone},
                             {i.params.external_id for i in missing if i.params.external_id})
            new = [i for i in missing if self._lookup(i.params) is None]
            if new:
                seen: set[tuple[str | None, str | None]] = set()
                for item in new:
                    p = item.params
                    if (p.phone, p.external_id) in seen:
                        continue
                    seen.add((p.phone, p.external_id))
                    # One at a time: a unique conflict must only skip the row that has it.
                    await conn.execute(
                        self._insert(users).values(
                            phone=p.phone, external_id=p.external_id, display_name=p.profile_name,
                            onboarding_step="new", mode="guest", email_verified=False, opted_out=False,
                            credit_balance=0, delivery_failures=0, created_at=item.now,
                            **locale_for(p.phone, self.defaults).columns(),
                        ).on_conflict_do_nothing()
                    )
                await self._load(conn, {i.params.phone for i in new if i.params.phone},
                                 {i.params.external_id for i in new if i.params.external_id})
        resolved: list[KnownUser] = []
        for item in batch:
            user = self._lookup(item.params)
            if user is None:
                raise RuntimeError(f"no user for message {item.params.message_sid}")
            await self._update(conn, user, item.params)
            resolved.append(user)
        return resolved

    async def _update(self, conn: AsyncConnection, user: KnownUser, p: InboundParams) -> None:
        """Keeps the BSUID, the number (an alias) and the WhatsApp name up to date."""
        users = User.__table__
        values: dict[str, Any] = {}
        if p.external_id and user.external_id is None:
            values["external_id"] = p.external_id
        if p.phone and user.phone is None:
            taken = await conn.scalar(select(users.c.id).where(users.c.phone == p.phone))
            if taken is None:
                values["phone"] = p.phone
        if p.profile_name and p.profile_name != user.display_name:
            values["display_name"] = p.profile_name
        if values:
            await conn.execute(update(users).where(users.c.id == user.id).values(**values))
            user.external_id = values.get("external_id", user.external_id)
            user.phone = values.get("phone", user.phone)
            user.display_name = values.get("display_name", user.display_name)
            self._remember(user)

    async def _reset_delivery_health(self, conn: AsyncConnection, user_ids: list[int]) -> None:
        """A message from the user proves the number works: proactive sends to it resume."""
        users = User.__table__
        await conn.execute(
            update(users)
            .where(users.c.id.in_(user_ids),
                   or_(users.c.delivery_failures != 0, users.c.delivery_blocked_at.is_not(None)))
            .values(delivery_failures=0, delivery_blocked_reason=None, delivery_blocked_at=None)
        )

    async def _apply_stops(self, conn: AsyncConnection, new: list[tuple[_Pending, KnownUser]]) -> None:
        """A typed STOP opts the user out now, in the transaction that stores it: their earlier
        messages still queued are then never answered, and a turn already running sends nothing
        more (bot.channel.outbound reads the flag before each send). The worker confirms it in turn."""
        users = User.__table__
        not_yet = or_(users.c.opted_out.is_(False), users.c.opted_out.is_(None))
        for item, user in new:
            if is_stop(item.params.body):
                await conn.execute(update(users).where(users.c.id == user.id, not_yet)
                                   .values(opted_out=True, opted_out_at=item.now))

    # --- messages ------------------------------------------------------------------------------
    async def _write(self, batch: list[_Pending]) -> list[tuple[int, int | None]]:
        inbound = InboundMessage.__table__
        conn = await self._connection()
        async with conn.begin():
            users = await self._resolve(conn, batch)
            await self._reset_delivery_health(conn, sorted({u.id for u in users}))
            rows = [
                {"message_sid": i.params.message_sid, "user_id": u.id, "channel": i.params.channel,
                 "from_addr": i.params.from_addr, "to_addr": i.params.to_addr, "body": i.params.body,
                 "media": i.params.media or None, "params": i.params.params, "status": "pending",
                 "attempts": 0, "lease_until": None, "error": None, "created_at": i.now, "processed_at": None}
                for i, u in zip(batch, users, strict=True)
            ]
            stmt = (self._insert(inbound).on_conflict_do_nothing(index_elements=["message_sid"])
                    .returning(inbound.c.id, inbound.c.message_sid))
            if len(rows) == 1:
                inserted = (await conn.execute(stmt.values(**rows[0]))).all()
            else:
                inserted = (await conn.execute(stmt, rows)).all()
            ids = {row.message_sid: row.id for row in inserted}
            await self._apply_stops(conn, [(i, u) for i, u in zip(batch, users, strict=True)
                                           if i.params.message_sid in ids])
        results: list[tuple[int, int | None]] = []
        for item, user in zip(batch, users, strict=True):
            # A MessageSid twice in one batch: only its first occurrence gets the row.
            results.append((user.id, ids.pop(item.params.message_sid, None)))
        return results
