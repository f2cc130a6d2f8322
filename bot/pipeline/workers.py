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
from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy import or_, select, update

from bot.channel.outbound import run_outbox
from bot.clock import system_now
from bot.periodic import Job
from bot.pipeline.messages import Dispatch, Messages, Ran, pending_after
from bot.pipeline.rate import UserRate
from bot.pipeline.scheduler import run_jobs, sweep_each_interval
from bot.services import Services
from bot.storage.models import InboundMessage
from bot.storage.state import lock_key

log = logging.getLogger("bot.pipeline.workers")


class Pipeline:
    def __init__(self, services: Services, dispatch: Dispatch, *, concurrency: int | None = None,
                 jobs: Sequence[Job] = ()) -> None:
        self.services = services
        self.dispatch = dispatch
        self.concurrency = concurrency or services.settings.worker_concurrency
        self.jobs = list(jobs)
        self.active: set[int] = set()  # users this process is working on
        # Users popped from the queue while this process worked on them: looked at again once let go.
        self.poked: set[int] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self._later: set[asyncio.Task[None]] = set()
        self._stopping = asyncio.Event()
        self.leases = _Leases(services, self._later)
        self.messages = Messages(services, dispatch)
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
                    self.poked.add(user_id)  # this process is on it: it looks again once it lets go
                    continue
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
        self.poked.discard(user_id)  # what was pushed before is found by the claims that follow
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
        # A message that arrived after the last claim's look: its webhook pushed the user, and the
        # pop found them active (`poked`). Rows left because this process stops are looked for.
        # Either is queued again (for another worker, now rather than at the next sweep).
        elif self._popped_meanwhile(user_id) or (
                self._stopping.is_set() and await self._has_pending(user_id)):
            with contextlib.suppress(Exception):  # the sweeper queues it otherwise
                await state.push_user(user_id)

    def _popped_meanwhile(self, user_id: int) -> bool:
        if user_id not in self.poked:
            return False
        self.poked.discard(user_id)
        return True

    async def _run_rows(self, user_id: int, current: dict[str, int | None]) -> bool:
        """Runs the user's rows one by one; True when it stopped with work left for later."""

        async def started(row_id: int) -> None:
            current["row"] = row_id
            await self.rate.started(user_id)

        while not self._stopping.is_set():
            if await self.rate.holds_back(user_id, self._has_pending):
                return True  # kept pending, in order: answered once the user's minute allows
            ran = await self.messages.next(user_id, started)
            current["row"] = None
            if ran in (Ran.NOTHING, Ran.LAST):
                return False
            if ran in (Ran.BUSY, Ran.POSTPONED):
                return True  # BUSY: leased elsewhere; POSTPONED: look again later rather than spin
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
            return await pending_after(db, user_id)


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
            row_id = current["row"]
            # The row's lease in the database is extended first and on the side: waiting for
            # SQLite's writer must never delay the lock's renewal below, and a shared state that
            # does not answer must never let the row's lease run out (another worker would then
            # take the message over and answer it a second time).
            if row_id is not None and (db_renewal is None or db_renewal.done()):
                db_renewal = asyncio.create_task(self._extend_row_lease(row_id, lease))
                self._later.add(db_renewal)
                db_renewal.add_done_callback(self._later.discard)
            try:
                async with asyncio.timeout(lease / 3):
                    renewed = await self.services.state.renew(lock_key(user_id), token, lease)
                if not renewed:
                    log.warning("user lock lost", extra={"user_id": user_id})
            except Exception:
                # The row's lease alone guards the message until the shared state answers again.
                log.warning("could not renew a user lock", extra={"user_id": user_id})

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
