"""Workers: each user's messages one at a time, in arrival order, durably; users concurrently.

The database is the truth: an inbound message is a row, `pending` until a worker takes it. The
queue in State only says "this user has work"; a lost entry delays work (the sweeper finds it)
but never loses it. A worker holds the user's lock (a lease it renews) while it runs that user's
pending rows in id order, so two workers never run the same user. A row left `processing` by a
worker that died is found again: run again if it answered nothing yet, else the user is told.
After MAX_ATTEMPTS the row is `failed` and the user is told plainly.

The pipeline does not know the handlers: the composition root (bot/cli.py) passes `dispatch`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import exists, or_, select, update

from bot import logs, metrics
from bot.capabilities.learner import current_session
from bot.channel.context import Incoming
from bot.channel.outbound import SendKeys, inbound_outcome, run_outbox, send_to_user, sending
from bot.clock import system_now
from bot.pipeline.rate import UserRate
from bot.pipeline.scheduler import Job, run_jobs, sweep_each_interval
from bot.services import Services
from bot.storage.db import rowcount
from bot.storage.models import Conversation, InboundMessage, OutboundMessage, User
from bot.storage.state import is_unavailable, lock_key

log = logging.getLogger("bot.pipeline.workers")

Dispatch = Callable[[Incoming], Awaitable[Any]]


def _t(user: User, fr: str, en: str) -> str:
    return en if (user.language or "fr") == "en" else fr


APOLOGY = (
    "Désolé, un problème technique m'a empêché de répondre à ton message. Réessaie dans un instant.",
    "Sorry, a technical problem stopped me from answering your message. Please try again in a moment.",
)
GAVE_UP = (
    "Désolé, je n'ai pas réussi à traiter ton message « {quote} ». Peux-tu le renvoyer ?",
    "Sorry, I could not process your message \"{quote}\". Could you send it again?",
)
INTERRUPTED = (
    "Ma réponse précédente a été interrompue. Si elle te semble incomplète, redemande-moi.",
    "My previous answer was interrupted. If it looks incomplete, please ask again.",
)


BUSY = -1  # _claim_next: the user's current message is still leased to a live worker


async def active_conversation(db: Any, user: User, now: Any, idle_s: int) -> Conversation:
    """The user's conversation for a message arriving `now`: a new session after `idle_s` of silence
    (bot.capabilities.learner.sessions), which starts with the carried-over note."""
    return await current_session(db, user.id, now, idle_s)


class Pipeline:
    def __init__(self, services: Services, dispatch: Dispatch, *, concurrency: int | None = None,
                 jobs: Sequence[Job] = ()) -> None:
        self.services = services
        self.dispatch = dispatch
        self.concurrency = concurrency or services.settings.worker_concurrency
        self.jobs = list(jobs)
        self.active: set[int] = set()  # users this process is working on
        self._tasks: list[asyncio.Task[None]] = []
        self._later: set[asyncio.Task[None]] = set()
        self._stopping = asyncio.Event()
        self.leases = _Leases(services, self._later)
        self.messages = _Messages(services, dispatch)
        self.rate = UserRate(services)  # USER_MAX_MESSAGES_PER_MINUTE

    # --- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        self._stopping.clear()
        self._tasks = [
            asyncio.create_task(self._worker(n), name=f"worker-{n}") for n in range(self.concurrency)
        ]
        self._tasks.append(asyncio.create_task(self._sweeper(), name="sweeper"))
        # Replies Twilio did not take at once are retried from the outbox (bot.channel.outbound).
        self._tasks.append(asyncio.create_task(run_outbox(self.services, self._stopping), name="outbox"))
        if self.jobs and self.services.settings.jobs_enabled:
            self._tasks.append(asyncio.create_task(run_jobs(self.services, self.jobs, self._stopping),
                                                   name="scheduler"))
        # Work left from before a restart is picked up now, not at the first sweep.
        await self.sweep()

    async def stop(self, grace_s: float = 0.0) -> None:
        """Stops claiming; the turns in flight get `grace_s` to end (a user's rows still pending are
        queued again for another worker). What runs after that is cancelled: a turn cut short is
        left `processing` with its lease ended, and another worker (or the next start) recovers it."""
        self._stopping.set()
        if grace_s > 0:
            # Workers end after their current row, the scheduler and the outbox after their round;
            # the sweeper only sleeps.
            ending = [t for t in self._tasks if t.get_name() != "sweeper"]
            if ending:
                await asyncio.wait(ending, timeout=grace_s)
        tasks = self._tasks + list(self._later)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks = []
        self._later.clear()

    async def run_forever(self) -> None:
        await self.start()
        try:
            await self._stopping.wait()
        finally:
            await self.stop()

    # --- queue -----------------------------------------------------------------------------
    async def _worker(self, n: int) -> None:
        state = self.services.state
        while not self._stopping.is_set():
            try:
                user_id = await state.pop_user(0.5)
                if user_id is None:
                    continue
                if self._stopping.is_set():
                    await state.push_user(user_id)  # popped as this process stops: for another worker
                    return
                if user_id in self.active:
                    continue  # this process is on it and re-checks for new rows before letting go
                await self.process_user(user_id)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("worker loop error", extra={"worker": n})
                await asyncio.sleep(0.5)

    def _push_later(self, user_id: int) -> None:
        # A user held back by the rate limit is looked at again once their minute allows.
        delay = self.rate.next_look(user_id, self.services.settings.requeue_delay_s)
        if delay is None:
            return

        async def push() -> None:
            await asyncio.sleep(delay)
            with contextlib.suppress(Exception):  # shared state down: the sweeper queues it later
                await self.services.state.push_user(user_id)

        task = asyncio.create_task(push())
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    async def _sweeper(self) -> None:
        await sweep_each_interval(self.services.state, "sweeper", self.services.settings.sweep_interval_s,
                                  self.sweep, log, "sweep", self._stopping.is_set)

    async def sweep(self) -> int:
        """Queues every user with pending rows or rows whose worker died; returns how many."""
        async with self.services.sessions() as db:
            rows = await db.scalars(
                select(InboundMessage.user_id)
                .where(or_(InboundMessage.status == "pending",
                           (InboundMessage.status == "processing")
                           & (InboundMessage.lease_until < system_now())))
                .distinct()
            )
            user_ids = [uid for uid in rows if uid not in self.active]
        for uid in user_ids:
            await self.services.state.push_user(uid)
        return len(user_ids)

    # --- one user --------------------------------------------------------------------------
    async def process_user(self, user_id: int) -> None:
        state = self.services.state
        token = await state.acquire(lock_key(user_id), self.services.settings.worker_lease_s)
        if token is None:
            self._push_later(user_id)  # another worker has this user; look again shortly
            return
        self.active.add(user_id)
        current: dict[str, int | None] = {"row": None}
        done = asyncio.Event()
        renewer = asyncio.create_task(self.leases.renew(user_id, token, current, done))
        busy = False
        try:
            busy = await self._run_rows(user_id, current)
        finally:
            # Told to stop rather than cancelled: cancelling a database or Redis call half-way can
            # leave its connection in a state where returning it to the pool hangs.
            done.set()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            await self._let_go(user_id, token, current["row"])
        if busy and not self._stopping.is_set():
            self._push_later(user_id)
        # A message that arrived between the last claim and the release, or rows left because this
        # process stops: queued again (for another worker, now rather than at the next sweep).
        elif await self._has_pending(user_id):
            with contextlib.suppress(Exception):  # the sweeper queues it otherwise
                await state.push_user(user_id)

    async def _run_rows(self, user_id: int, current: dict[str, int | None]) -> bool:
        """Runs the user's rows one by one; True when it stopped with work left for later."""
        while not self._stopping.is_set():
            if await self.rate.holds_back(user_id, self._has_pending):
                return True  # kept pending, in order: answered once the user's minute allows
            row_id = await self.messages.claim_next(user_id)
            if row_id is None:
                return False
            if row_id == BUSY:
                return True
            await self.rate.started(user_id)
            current["row"] = row_id
            handled = await self.messages.process(row_id)
            current["row"] = None
            if not handled:
                return True  # look again later rather than spin while Redis is away
        return False

    async def _let_go(self, user_id: int, token: str, row_id: int | None) -> None:
        """Gives back what process_user held: the row's lease if a turn was cut, the user's lock."""
        if row_id is not None:
            # Stopped in the middle of a turn: give the row's lease back so that the next
            # start recovers it at once.
            await self.leases.end(row_id)
        self.active.discard(user_id)
        try:
            await self.services.state.release(lock_key(user_id), token)
        except Exception:
            # Shared state unreachable: the lock expires by itself; the row's lease in the
            # database is what keeps two workers off the same message meanwhile.
            log.warning("could not release a user lock", extra={"user_id": user_id})

    async def _has_pending(self, user_id: int) -> bool:
        async with self.services.sessions() as db:
            found = await db.scalar(
                select(InboundMessage.id)
                .where(InboundMessage.user_id == user_id, InboundMessage.status == "pending").limit(1)
            )
        return found is not None


class _Leases:
    """The leases that keep one user's work to one worker: the user's lock in the shared state,
    renewed while it runs, and the current row's lease in the database beside it."""

    def __init__(self, services: Services, later: set[asyncio.Task[None]]) -> None:
        self.services = services
        self._later = later  # the pipeline's side tasks, cancelled when it stops

    async def renew(self, user_id: int, token: str, current: dict[str, int | None],
                     done: asyncio.Event) -> None:
        lease = self.services.settings.worker_lease_s
        db_renewal: asyncio.Task[None] | None = None
        while True:
            try:
                await asyncio.wait_for(done.wait(), lease / 3)
                return
            except TimeoutError:
                pass
            try:
                if not await self.services.state.renew(lock_key(user_id), token, lease):
                    log.warning("user lock lost", extra={"user_id": user_id})
            except Exception:
                # Keep extending the row's lease below: it alone guards the message until the
                # shared state answers again.
                log.warning("could not renew a user lock", extra={"user_id": user_id})
            row_id = current["row"]
            # The row's lease in the database is extended on the side: waiting for SQLite's
            # writer must never delay the lock's renewal above.
            if row_id is not None and (db_renewal is None or db_renewal.done()):
                db_renewal = asyncio.create_task(self._extend_row_lease(row_id, lease))
                self._later.add(db_renewal)
                db_renewal.add_done_callback(self._later.discard)

    async def _extend_row_lease(self, row_id: int, lease: float) -> None:
        try:
            async with self.services.sessions() as db:
                await db.execute(
                    update(InboundMessage)
                    .where(InboundMessage.id == row_id, InboundMessage.status == "processing")
                    .values(lease_until=system_now() + timedelta(seconds=lease))
                )
                await db.commit()
        except Exception:
            log.warning("could not extend a message's lease", extra={"inbound_id": row_id})

    async def end(self, row_id: int) -> None:
        try:
            async with self.services.sessions() as db:
                await db.execute(
                    update(InboundMessage)
                    .where(InboundMessage.id == row_id, InboundMessage.status == "processing")
                    .values(lease_until=system_now() - timedelta(seconds=1))
                )
                await db.commit()
        except Exception:
            log.warning("could not end the lease of an interrupted message", extra={"inbound_id": row_id})


class _Messages:
    """One row at a time: claimed, recovered when a dead worker left it, handled, or failed."""

    def __init__(self, services: Services, dispatch: Dispatch) -> None:
        self.services = services
        self.dispatch = dispatch

    async def claim_next(self, user_id: int) -> int | None:
        """The next row of this user, marked `processing`; recovers a row a dead worker left."""
        settings = self.services.settings
        async with self.services.sessions() as db:
            orphan = await db.scalar(
                select(InboundMessage)
                .where(InboundMessage.user_id == user_id, InboundMessage.status == "processing")
                .order_by(InboundMessage.id).limit(1)
            )
            if orphan is not None:
                # We hold the user's lock, so whoever marked it `processing` should be gone; its
                # lease in the database must have run out too before the row is taken from it.
                if orphan.lease_until is not None and orphan.lease_until > system_now():
                    return BUSY
                await self._recover(db, orphan)
                await db.commit()
                if orphan.status != "pending":
                    return await self.claim_next(user_id)
            row = await db.scalar(
                select(InboundMessage)
                .where(InboundMessage.user_id == user_id, InboundMessage.status == "pending")
                .order_by(InboundMessage.id).limit(1)
            )
            if row is None:
                return None
            claimed = await db.execute(
                update(InboundMessage)
                .where(InboundMessage.id == row.id, InboundMessage.status == "pending")
                .values(status="processing", attempts=InboundMessage.attempts + 1,
                        lease_until=system_now() + timedelta(seconds=settings.worker_lease_s))
            )
            await db.commit()
            return row.id if rowcount(claimed) == 1 else None

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
                await send_to_user(self.services, user, text=_t(user, *texts), kind="system")
            except Exception:
                log.exception("could not tell the user", extra={"user_id": user.id})

    async def process(self, row_id: int) -> bool:
        """Handles one row; False when it was postponed (the shared state did not answer)."""
        services = self.services
        started = time.perf_counter()
        # The keys: a replayed turn's sends are found.
        with sending(inbound=row_id, keys=SendKeys(f"in:{row_id}")):
            log_token = logs.bind(inbound_id=row_id)
            try:
                async with services.sessions() as db:
                    msg = await self._arrived(db, row_id)
                    row, user = msg.inbound, msg.user
                    assert row is not None
                    with sending(session=db):
                        try:
                            await self._handle(msg, row)
                            # done, or delivering while an answer waits in the outbox (bot.channel.outbound).
                            row.status, row.processed_at = await inbound_outcome(db, row_id), system_now()
                            await db.commit()
                            metrics.TURNS.labels("done").inc()
                        except asyncio.CancelledError:
                            raise
                        except Exception as exc:
                            await db.rollback()
                            if is_unavailable(exc):
                                log.warning("shared state unavailable; message postponed",
                                            extra={"inbound_id": row_id, "user_id": user.id})
                                await self._postpone(row_id, repr(exc)[:2000])
                                return False
                            log.exception("message failed", extra={"inbound_id": row_id, "user_id": user.id})
                            await self._fail(row_id, repr(exc)[:2000])
            finally:
                metrics.TURN_SECONDS.observe(time.perf_counter() - started)
                logs.reset(log_token)
        return True

    async def _arrived(self, db: Any, row_id: int) -> Incoming:
        """Notes the message's arrival on its user and conversation; the message handlers get."""
        services = self.services
        row = await db.get(InboundMessage, row_id)
        assert row is not None
        user = await db.get(User, row.user_id)
        assert user is not None
        now = services.clock()
        arrived = row.created_at or now
        conv = await active_conversation(db, user, arrived, services.settings.learning.session_idle_s)
        logs.bind(inbound_id=row_id, message_sid=row.message_sid, user_id=user.id, conversation_id=conv.id)
        conv.user_message_count = (conv.user_message_count or 0) + 1
        conv.last_user_message_at = max(conv.last_user_message_at or arrived, arrived)
        user.last_inbound_at = max(user.last_inbound_at or arrived, arrived)
        if row.channel == "whatsapp":
            user.last_whatsapp_inbound_at = max(user.last_whatsapp_inbound_at or arrived, arrived)
        user.last_channel = row.channel
        # Committed now: the turn may take long, and SQLite has a single writer.
        await db.commit()
        return Incoming(services=services, db=db, user=user, conversation=conv, inbound=row,
                        channel=row.channel, text=(row.body or "").strip())

    async def _handle(self, msg: Incoming, row: InboundMessage) -> None:
        """Receives the message's media and voice, then hands it to the handlers when anything
        is left to answer (a file that could not be received has been apologised for)."""
        from bot.capabilities import media, speech

        services, db = self.services, msg.db
        received, failed = await media.receive_all(services, db, msg.user, row)
        if received:
            await db.commit()
        msg.extra["files"] = received
        msg.extra["media_failed"] = failed
        if failed:
            await msg.reply(msg.t(
                "Je n'ai pas pu recevoir ton fichier. Peux-tu le renvoyer ?",
                "I could not receive your file. Could you send it again?",
            ), kind="system")
        # A voice note's words become the message's text for every handler.
        await speech.hear(msg)
        unheard = msg.extra.get("voice_failed") and not msg.text and not msg.extra["files"]
        if (msg.text or received or not failed) and not unheard:
            taken_by = await self.dispatch(msg)
            log.info("message handled", extra={"handler": taken_by, "channel": row.channel})

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
