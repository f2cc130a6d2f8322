"""One user's rows, one at a time: claimed, recovered when a dead worker left one, handled, failed.

Each message costs the pipeline two transactions of its own: the claim, with the message's
arrival noted on its user and conversation (`claim`), and its end, with the look for the user's
next pending row (`run`). Between them the handlers use the same session (`Incoming.db`).
"""

from __future__ import annotations

import asyncio
import enum
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import ColumnElement, bindparam, case, exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.sql.dml import ReturningUpdate

from bot import logs, metrics
from bot.channel import menus
from bot.channel.context import FILES_WAITING, LACKS, UNTOLD, Incoming
from bot.channel.outbound import SendKeys, files_waiting, finish_inbound, send_to_user, sending
from bot.clock import system_now
from bot.learning import arrival
from bot.school import untold_work
from bot.services import Services
from bot.storage.db import writes_due
from bot.storage.models import Conversation, InboundMessage, OutboundMessage, User
from bot.storage.state import is_unavailable
from bot.texts import fr_en

log = logging.getLogger("bot.pipeline.workers")

Dispatch = Callable[[Incoming], Awaitable[str]]  # the name of the handler that took the message


class Ran(enum.Enum):
    """What `Messages.next` did."""

    NOTHING = "nothing"  # no pending row
    BUSY = "busy"  # the user's current row is still leased to a live worker
    MORE = "more"  # a row handled (or failed), and another one waits
    LAST = "last"  # a row handled (or failed), and none waits
    POSTPONED = "postponed"  # the shared state did not answer: the row is pending again


APOLOGY = (
    "Désolé, un problème technique m'a empêché de répondre à ce message. Merci de réessayer dans un instant.",
    "Sorry, a technical problem stopped me from answering your message. Please try again in a moment.",
)
GAVE_UP = (
    "Désolé, je n'ai pas réussi à traiter le message « {quote} ». Merci de le renvoyer.",
    "Sorry, I could not process your message \"{quote}\". Could you send it again?",
)
INTERRUPTED = (
    "Ma réponse précédente a été interrompue. Si elle semble incomplète, il suffit de redemander.",
    "My previous answer was interrupted. If it looks incomplete, please ask again.",
)


async def pending_after(db: AsyncSession, user_id: int) -> bool:
    """Whether one of the user's rows is still pending."""
    found = await db.scalar(
        select(InboundMessage.id)
        .where(InboundMessage.user_id == user_id, InboundMessage.status == "pending").limit(1)
    )
    return found is not None


_MENU = "menu"


@functools.cache
def _lookouts() -> dict[str, ColumnElement[bool]]:
    """What the handlers look for and most messages lack, read with the arrival (one SELECT, not
    one each): files kept for the user, an assignment not told, the conversation's menu row. Built
    once: they name no value of their own."""
    return {FILES_WAITING: exists().where(files_waiting(User.id)),
            UNTOLD: exists().where(untold_work(User.id)),
            _MENU: menus.kept(Conversation.id)}


_Claim = ReturningUpdate[InboundMessage]


@functools.cache
def _take_statement(by_row: bool) -> _Claim:
    """`Messages._take`'s UPDATE, built once per shape (its values bound at each claim): building
    it cost about half a millisecond of a worker's CPU a message."""
    where: list[Any] = [InboundMessage.status == "pending"]
    if by_row:
        where.append(InboundMessage.id == bindparam("b_row_id"))
    else:
        # Aliases: a subquery on the updated table itself would be correlated to it.
        first, left = aliased(InboundMessage), aliased(InboundMessage)
        earliest = (select(first.id).where(first.user_id == bindparam("b_user_id"), first.status == "pending")
                    .order_by(first.id).limit(1).scalar_subquery())
        where.append(InboundMessage.id == earliest)
        where.append(~exists().where(left.user_id == bindparam("b_user_id"), left.status == "processing"))
    return (update(InboundMessage).where(*where)
            .values(status="processing", attempts=InboundMessage.attempts + 1,
                    lease_until=bindparam("b_lease_until", type_=InboundMessage.lease_until.type))
            .returning(InboundMessage)
            .execution_options(populate_existing=True, synchronize_session=False))


class Messages:
    """The rows of the user a worker holds, claimed and handled one at a time in id order."""

    def __init__(self, services: Services, dispatch: Dispatch) -> None:
        self.services = services
        self.dispatch = dispatch

    async def next(self, user_id: int, started: Callable[[int], Awaitable[None]]) -> Ran:
        """Claims the user's next row and handles it; `started(row_id)` is told once it is claimed."""
        services = self.services
        began = time.perf_counter()
        log_token = logs.bind(user_id=user_id)
        try:
            async with services.sessions() as db:
                claimed = await self._claim(db, user_id)
                if isinstance(claimed, Ran):
                    return claimed
                msg = await self._arrived(db, claimed)
                # Committed now, claim and arrival together: the turn may take long, and SQLite has
                # a single writer.
                await db.commit()
                await started(claimed.id)
                return await self._run(db, msg)
        finally:
            metrics.TURN_SECONDS.observe(time.perf_counter() - began)
            logs.reset(log_token)

    async def _claim(self, db: AsyncSession, user_id: int) -> InboundMessage | Ran:
        """Marks the user's next row `processing` (not committed) and returns it as the claim left
        it; recovers a row a dead worker left. The usual case, a pending row and none left
        `processing`, is one UPDATE; else one look finds either: a row left `processing` comes
        first, then the earliest pending one."""
        statement, values = self._take(user_id, None)
        taken = await db.scalar(statement, values)
        if taken is not None:
            return taken
        # The UPDATE that matched nothing began SQLite's write transaction: ended before a recovery
        # tells the user in a session of its own.
        await db.rollback()
        processing = InboundMessage.status == "processing"
        first = (await db.execute(
            select(InboundMessage.id, InboundMessage.status, InboundMessage.lease_until)
            .where(InboundMessage.user_id == user_id, InboundMessage.status.in_(("processing", "pending")))
            .order_by(case((processing, 0), else_=1), InboundMessage.id).limit(1)
        )).first()
        if first is None:
            return Ran.NOTHING
        row_id, status, lease_until = first
        if status == "processing":
            # We hold the user's lock, so whoever marked it `processing` should be gone; its
            # lease in the database must have run out too before the row is taken from it.
            if lease_until is not None and lease_until > system_now():
                return Ran.BUSY
            orphan = await db.get(InboundMessage, row_id, populate_existing=True)
            assert orphan is not None
            await self._recover(db, orphan)
            await db.commit()
            return await self._claim(db, user_id)
        statement, values = self._take(user_id, row_id)
        claimed = await db.scalar(statement, values)
        return claimed if claimed is not None else Ran.NOTHING

    def _take(self, user_id: int, row_id: int | None) -> tuple[_Claim, dict[str, Any]]:
        """The UPDATE that claims row `row_id` if still pending; None: the user's earliest pending
        row, when none is left `processing` (which a recovery must see first). With its values."""
        lease_until = system_now() + timedelta(seconds=self.services.settings.worker_lease_s)
        if row_id is not None:
            return _take_statement(True), {"b_row_id": row_id, "b_lease_until": lease_until}
        return _take_statement(False), {"b_user_id": user_id, "b_lease_until": lease_until}

    async def _arrived(self, db: AsyncSession, row: InboundMessage) -> Incoming:
        """Notes the message's arrival on its user and conversation; the message handlers get."""
        services = self.services
        row_id = row.id
        arrived = row.created_at or services.clock()
        looks = _lookouts()
        found = await arrival(db, row.user_id, arrived, services.settings.learning.session_idle_s,
                              list(looks.values()))
        assert found is not None
        user, conv, there = found
        lacks = frozenset(name for name, found_one in zip(looks, there, strict=True) if not found_one)
        if _MENU in lacks:
            menus.none_kept(db, conv.id)  # a new session's conversation has none either
        logs.bind(inbound_id=row_id, message_sid=row.message_sid, user_id=user.id, conversation_id=conv.id)
        conv.user_message_count = (conv.user_message_count or 0) + 1
        conv.last_user_message_at = max(conv.last_user_message_at or arrived, arrived)
        user.last_inbound_at = max(user.last_inbound_at or arrived, arrived)
        if row.channel == "whatsapp":
            user.last_whatsapp_inbound_at = max(user.last_whatsapp_inbound_at or arrived, arrived)
        user.last_channel = row.channel
        return Incoming(services=services, db=db, user=user, conversation=conv, inbound=row,
                        channel=row.channel, text=(row.body or "").strip(), extra={LACKS: lacks})

    async def _run(self, db: AsyncSession, msg: Incoming) -> Ran:
        """Handles the claimed row; its end and the look for the next row are one transaction."""
        row, user = msg.inbound, msg.user
        assert row is not None
        # The keys: a replayed turn's sends are found.
        with sending(inbound=row.id, keys=SendKeys(f"in:{row.id}"), session=db,
                     reply_from=(user.id, row.to_addr or "")):
            try:
                await self._handle(msg, row)
                # done, or delivering while an answer waits in the outbox (bot.channel.outbound).
                now = system_now()
                await writes_due(db)  # the answer's SID (bot.channel.outbound): finish_inbound reads it
                status, more = await finish_inbound(db, row.id, user.id, now)
                set_committed_value(row, "status", status)
                set_committed_value(row, "processed_at", now)
                await db.commit()
                metrics.TURNS.labels("done").inc()
                return Ran.MORE if more else Ran.LAST
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await db.rollback()
                if is_unavailable(exc):
                    log.warning("shared state unavailable; message postponed",
                                extra={"inbound_id": row.id, "user_id": user.id})
                    await self._postpone(row.id, repr(exc)[:2000])
                    return Ran.POSTPONED
                log.exception("message failed", extra={"inbound_id": row.id, "user_id": user.id})
                await self._fail(row.id, repr(exc)[:2000])
                return Ran.MORE

    async def _handle(self, msg: Incoming, row: InboundMessage) -> None:
        """Receives the message's media and voice, then hands it to the handlers when anything
        is left to answer (a file that could not be received has been apologised for)."""
        from bot.media import received as media
        from bot.media import speech

        services, db = self.services, msg.db
        received, failed = await media.receive_all(services, db, msg.user, row)
        if received:
            await db.commit()
        msg.extra["files"] = received
        msg.extra["media_failed"] = failed
        if failed:
            await msg.reply(msg.t(
                "Je n'ai pas pu recevoir ce fichier. Merci de le renvoyer.",
                "I could not receive your file. Could you send it again?",
            ), kind="system")
        # Photos and scans are read (OCR) while the turn goes on, kept with the message.
        readings = media.start_reading(services, received, row.body)
        try:
            # A voice note's words become the message's text for every handler.
            await speech.hear(msg)
            unheard = msg.extra.get("voice_failed") and not msg.text and not msg.extra["files"]
            if (msg.text or received or not failed) and not unheard:
                taken_by = await self.dispatch(msg)
                log.info("message handled", extra={"handler": taken_by, "channel": row.channel})
        except BaseException:
            media.stop_reading(services, readings)
            raise
        await media.finish_reading(services, db, readings)

    # --- what goes wrong ---------------------------------------------------------------------
    async def _recover(self, db: Any, row: InboundMessage) -> None:
        answered = await db.scalar(select(exists().where(OutboundMessage.inbound_id == row.id)))
        user = await db.get(User, row.user_id)
        log.warning("recovering an interrupted message",
                    extra={"inbound_id": row.id, "user_id": row.user_id, "attempts": row.attempts,
                           "answered": bool(answered)})
        if answered:
            row.status, row.error = "failed", "interrupted after replying"
            row.processed_at = system_now()
            await self._tell(user, row.id, INTERRUPTED)
        elif row.attempts >= self.services.settings.max_attempts:
            row.status, row.error = "failed", f"gave up after {row.attempts} attempts"
            row.processed_at = system_now()
            quote = (row.body or "").strip().replace("\n", " ")
            quote = quote[:60] + ("…" if len(quote) > 60 else "")
            fr, en = GAVE_UP
            await self._tell(user, row.id, (fr.format(quote=quote), en.format(quote=quote)))
            metrics.TURNS.labels("gave_up").inc()
        else:
            row.status, row.lease_until = "pending", None

    async def _tell(self, user: User | None, inbound_id: int, texts: tuple[str, str]) -> None:
        if user is None:
            return
        with sending(inbound=inbound_id, keys=SendKeys(f"in:{inbound_id}:system")):
            try:
                await send_to_user(self.services, user, text=fr_en(user.language, *texts), kind="system")
            except Exception:
                log.exception("could not tell the user", extra={"user_id": user.id})

    async def _postpone(self, row_id: int, error: str) -> None:
        """Back to `pending` for the sweeper to queue once Redis answers; nothing is lost.

        As after a crash, a message that already got part of its answer is not run twice: the
        user is told it was interrupted instead.
        """
        async with self.services.sessions() as db:
            row = await db.get(InboundMessage, row_id)
            assert row is not None
            row.error = error
            await self._recover(db, row)
            await db.commit()

    async def _fail(self, row_id: int, error: str) -> None:
        async with self.services.sessions() as db:
            row = await db.get(InboundMessage, row_id)
            assert row is not None
            row.status, row.error, row.processed_at = "failed", error, system_now()
            user = await db.get(User, row.user_id)
            await db.commit()
        metrics.TURNS.labels("failed").inc()
        await self._tell(user, row_id, APOLOGY)
