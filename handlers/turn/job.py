"""A background job: a promoted turn run to its end by a job worker.

`run_job` is what a job worker runs (bot/pipeline/job_workers.py passes it the job's id, under the job's
lease): it resumes the saved state step by step, saving it after each, so a worker killed mid-job
is replaced by another that starts again from the last saved step. A step run again neither sends
twice (each step's messages carry outbox keys `job:<id>:<step>:<n>`), nor charges twice (one
ledger ref per model call, numbered in the state), nor repeats a side effect (the tool-effect keys
of the message's turn, whose positions the state carries on). The user's other messages are
answered meanwhile: a job holds no user lock. A second long request waits behind the first.
Closing messages go before the status says ended; a person erased during a job is sent nothing.
"""

from __future__ import annotations

import contextlib
import logging
import traceback
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

import tools
from bot import jobs, logs
from bot.agent import history
from bot.agent.effects import EffectStore
from bot.agent.events import LoopEvent, StepStarted, Text, ToolEnded, ToolEvent, ToolProgress, ToolStarted
from bot.agent.loop import CANCELLED as LOOP_CANCELLED
from bot.agent.loop import PROVIDER_ERROR, Budget, TurnState
from bot.agent.sse import ToolCall
from bot.agent.toolspec import ToolContext
from bot.billing import credits
from bot.channel.buttons import Menu, send_menu
from bot.channel.outbound import SendKeys, send_to_user, sending
from bot.clock import system_now
from bot.services import Services
from bot.storage.db import rowcount
from bot.storage.models import Conversation, GenerationJob, InboundMessage, User, UserFile
from bot.texts import fr_en
from handlers.turn import drive
from handlers.turn.promote import with_link

__all__ = ["run_job"]

log = logging.getLogger(__name__)

FAILED_NOTE = (
    "❌ Désolé, je n'ai pas pu finir ce travail : {what}. Ce qui était prêt a été envoyé ; "
    "il suffit de redemander pour recommencer.",
    "❌ Sorry, I could not finish this work: {what}. Whatever was ready has been sent to you; "
    "ask me again to start over.",
)
CANCELLED_NOTE = ("🛑 Travail annulé.", "🛑 Work cancelled.")
DONE_SO_FAR = ("Déjà fait :", "Already done:")
NOTHING_DONE = ("Rien n'avait encore été fait.", "Nothing had been done yet.")
# How long a job waits before looking again when another job of the same user runs.
WAIT_BEHIND_S = 5.0
# Runs of a job that ended in an unexpected error before it is failed for good.
MAX_JOB_ATTEMPTS = 3

async def run_job(services: Services, job_id: int) -> None:
    """Runs (or resumes) one job to its end. Safe to call again for the same job."""
    # Its log lines carry the ids of the message it was started from, as the turn's did.
    with logs.scope(job_id=job_id):
        await _run_job(services, job_id)


async def _run_job(services: Services, job_id: int) -> None:
    loaded = await _begin(services, job_id)
    if loaded is None:
        return
    job, user, conversation = loaded
    logs.bind(**await _message_ids(services, job))
    state = TurnState.from_json(job.state or {})
    side = _JobTurn(services, job, user, state)
    try:
        outcome, answer = await _drive(services, side)
    except Exception as exc:
        await _crashed(services, job, user, exc)
        return
    if side.handed_back:
        await _hand_back(services, job)
        return
    await _end(services, job, user, conversation, state, outcome, answer)


async def _message_ids(services: Services, job: GenerationJob) -> dict[str, Any]:
    """The log ids of the message a job comes from: its row and Twilio's MessageSid."""
    async with services.sessions() as db:
        sid = await db.scalar(select(InboundMessage.message_sid).where(InboundMessage.id == job.inbound_id))
    return {"inbound_id": job.inbound_id, "message_sid": sid, "user_id": job.user_id,
            "conversation_id": job.conversation_id}


async def _hand_back(services: Services, job: GenerationJob) -> None:
    """Stopped after a step because this process shuts down: the job stays running, its heartbeat
    is dated back so that the sweeper of any process takes it up at once, and it is sent again."""
    async with services.sessions() as db:
        row = await db.get(GenerationJob, job.id)
        if row is not None and row.status == jobs.RUNNING:
            row.heartbeat_at = system_now() - timedelta(days=1)
            await db.commit()
    try:
        await services.jobs.aenqueue(job.id)
    except Exception:  # the broker is going away with this process: the sweeper finds the job
        log.warning("a handed-back job could not be sent again", extra={"job_id": job.id})


async def _begin(services: Services, job_id: int) -> tuple[GenerationJob, User, Conversation] | None:
    """Loads the job and marks it running; None when there is nothing to run now."""
    async with services.sessions() as db:
        job = await db.get(GenerationJob, job_id)
        if job is None or job.status in jobs.ENDED:
            return None
        user = await db.get(User, job.user_id)
        conversation = await db.get(Conversation, job.conversation_id)
        if user is None or conversation is None:
            return None
        if getattr(services.jobs, "draining", False):  # this process stops: leave it to another
            await services.jobs.aenqueue(job.id, delay_s=WAIT_BEHIND_S)
            return None
        if job.cancel_requested:
            await db.commit()
            await _cancelled(services, job, user, TurnState.from_json(job.state or {}))
            return None
        earlier = await db.scalar(select(func.min(GenerationJob.id)).where(
            GenerationJob.user_id == job.user_id, GenerationJob.status.in_(jobs.ACTIVE),
            GenerationJob.id != job.id))
        if earlier is not None and earlier < job.id:
            await services.jobs.aenqueue(job.id, delay_s=WAIT_BEHIND_S)  # queued behind the earlier one
            return None
        if "messages" not in (job.state or {}):
            await db.commit()
            await _crashed(services, job, user, ValueError("the job has no saved turn to resume"), final=True)
            return None
        # Only a job still wanted is taken: an ANNULER that just landed is not overwritten.
        taken = await db.execute(
            update(GenerationJob)
            .where(GenerationJob.id == job.id, GenerationJob.cancel_requested.is_(False),
                   GenerationJob.status.in_(jobs.ACTIVE))
            .values(status=jobs.RUNNING, attempts=GenerationJob.attempts + 1,
                    started_at=job.started_at or services.clock())
        )
        await db.commit()
        if not rowcount(taken):
            return None
        await db.refresh(job)
    await jobs.record_event(services, job.id, f"status:running:{job.attempts}", "status",
                            {"status": jobs.RUNNING})
    return job, user, conversation


class _JobTurn:
    """The job's side of the turn (a `drive.TurnSide`): its tools' context, its sends, its
    timeline, its charges, its saved state, and when it stops."""

    streams = False  # a job's answer goes whole, at its end

    def __init__(self, services: Services, job: GenerationJob, user: User, state: TurnState) -> None:
        self.services, self.job, self.user, self.state = services, job, user, state
        self.lang = user.language or "fr"
        self.conversation_id, self.channel = job.conversation_id, job.channel
        self.context_extra = {"inbound_id": job.inbound_id, "job_id": job.id}
        self.promote_at: float | None = None
        self.holds_tool_messages = False  # its state is saved after each step, with the messages
        self.lent_session: AsyncSession | None = None  # its tools take sessions of their own
        self.budget: Budget | None = None
        self.effects = (EffectStore(services.sessions, user.id, job.inbound_id, state.effects_from,
                                    services.clock) if job.inbound_id is not None else None)
        self.handed_back = False
        self.answer = ""
        self._step = contextlib.ExitStack()  # the running step's send keys

    async def deliver(self, text: str = "", media: UserFile | None = None, menu: Menu | None = None) -> Any:
        if menu is not None and media is None:
            return await send_menu(self.services, self.user, menu, channel=self.job.channel, kind="tool")
        result = await send_to_user(self.services, self.user, text=text, media=media,
                                    channel=self.job.channel, kind="tool")
        if media is not None:
            await self._add_file(media)
        return result

    async def _add_file(self, media: UserFile) -> None:
        async with self.services.sessions() as db:
            row = await db.get(GenerationJob, self.job.id)
            if row is not None and media.id not in (row.result_files or []):
                row.result_files = [*(row.result_files or []), media.id]
                await db.commit()
        await jobs.record_event(self.services, self.job.id, f"file:{media.id}", "file",
                                {"file_id": media.id, "name": media.name, "mime": media.mime})

    def make_context(self, call: ToolCall) -> ToolContext:
        return drive.tool_context(self, call)

    def on_text(self, chunk: str) -> bool:
        return False

    async def on_messages(self, new: list[dict[str, Any]]) -> None:
        return None  # the job's history is its answer, saved when it ends

    async def without_images(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        return None

    async def save(self, state: TurnState) -> None:
        async with self.services.sessions() as db:
            row = await db.get(GenerationJob, self.job.id)
            if row is not None:
                row.state = state.to_json()
                row.heartbeat_at = system_now()  # the sweeper compares heartbeats with the real clock
                await db.commit()

    async def should_stop(self) -> bool:
        if getattr(self.services.jobs, "draining", False):
            self.handed_back = True  # this process shuts down: another one takes the next step
            return True
        async with self.services.sessions() as db:
            wanted = await db.scalar(
                select(GenerationJob.cancel_requested).where(GenerationJob.id == self.job.id))
        # Gone (the person's data was erased) stops it as ANNULER does.
        return wanted is None or bool(wanted)

    async def open_budget(self) -> None:
        """What the user's balance still pays for, within their day; each model call charged once,
        by its number in the state."""
        settings, state = self.services.settings, self.state
        daily = credits.daily_tokens(self.services.state, settings, self.user, self.services.clock())
        self.budget = await credits.job_budget(self.services.sessions, self.user, settings, daily,
                                               self.job.id, state.charged_tokens, lambda: state.model_calls,
                                               self.services.clock)

    async def on_event(self, event: LoopEvent) -> None:
        if isinstance(event, StepStarted):
            # This step's sends are numbered by the job and the step: a replay finds them sent.
            self.end_step()
            self._step.enter_context(sending(keys=SendKeys(f"job:{self.job.id}:{event.n}")))
        elif isinstance(event, Text):
            self.answer = event.text
        elif isinstance(event, ToolStarted | ToolEnded | ToolProgress):
            await self.timeline(event)

    def end_step(self) -> None:
        self._step.close()

    async def timeline(self, event: ToolEvent) -> None:
        """The loop's tool events become the job's timeline (and its current step)."""
        services, job_id = self.services, self.job.id
        if isinstance(event, ToolProgress):
            await jobs.record_event(services, job_id, f"{self.state.iteration}:progress", event.kind,
                                    {"name": event.name, "note": event.note})
            return
        n, call_id = event.n, event.tool_call_id
        label = jobs.step_label(tools.step_of(event.name), self.lang)
        if isinstance(event, ToolStarted):
            await jobs.record_event(services, job_id, f"{n}:{call_id}:start", event.kind,
                                    {"name": event.name, "label": label, "n": n, "call_id": call_id})
            async with services.sessions() as db:
                row = await db.get(GenerationJob, job_id)
                if row is not None:
                    row.step = label[:200]
                    await db.commit()
        else:
            await jobs.record_event(services, job_id, f"{n}:{call_id}:end", event.kind,
                                    {"name": event.name, "label": label, "status": event.status,
                                     "duration_ms": event.duration_ms, "call_id": call_id})


async def _drive(services: Services, side: _JobTurn) -> tuple[Any, str]:
    """Runs the loop from the saved state to its end; (outcome, the answer's text)."""
    offered, known = drive.tools_for(services, side.user, side.state.tool_names)
    await side.open_budget()
    try:
        outcome = await drive.drive(side, side.state, offered, known)
    finally:
        side.end_step()
    return outcome, side.answer


async def _end(services: Services, job: GenerationJob, user: User, conversation: Conversation,
               state: TurnState, outcome: Any, answer: str) -> None:
    if outcome is None or outcome.exit_reason == LOOP_CANCELLED:
        await _cancelled(services, job, user, state)
        return
    failed = outcome.exit_reason == PROVIDER_ERROR
    status = jobs.FAILED if failed else jobs.COMPLETED
    async with services.sessions() as db:
        if await db.get(GenerationJob, job.id) is None:
            return  # erased meanwhile: nothing is sent to a person who asked to be forgotten
    # The answer carries the page's link: the files and steps stay findable there.
    text = with_link(services, answer, job.id, user.language or "fr") if answer.strip() else answer
    sent = await _say(services, job, user, text, "final")
    async with services.sessions() as db:
        await history.save(db, conversation.id, [{"role": "assistant", "content": answer}], job.inbound_id)
        await db.commit()
    await _close(services, job, status, answer, result_text=answer, state=state.to_json(),
                 error="provider_error" if failed else None)
    log.info("background job ended: %s (%s)", status, outcome.exit_reason,
             extra={"job_id": job.id, "user_id": user.id, "delivered": getattr(sent, "ok", None)})


def _done_steps(state: TurnState, lang: str) -> str:
    lines = [f"✅ {jobs.step_label(tools.step_of(r['name']), lang)}" for r in state.tool_runs
             if r.get("status") == "ok"]
    if not lines:
        return fr_en(lang, *NOTHING_DONE)
    return "\n".join([fr_en(lang, *DONE_SO_FAR), *lines])


async def _say(services: Services, job: GenerationJob, user: User, text: str, what: str) -> Any:
    """Sends the job's closing message once: its outbox key names the job and what it says."""
    with sending(keys=SendKeys(f"job:{job.id}:{what}")):
        return await send_to_user(services, user, text=text, channel=job.channel, kind="reply")


async def _close(services: Services, job: GenerationJob, status: str, text: str, **values: Any) -> None:
    """Writes the job's end (after its message went: a status seen ended means the user was told)."""
    async with services.sessions() as db:
        row = await db.get(GenerationJob, job.id)
        if row is not None:
            row.status, row.finished_at, row.step = status, services.clock(), None
            for name, value in values.items():
                setattr(row, name, value)
        await db.commit()
    await jobs.record_event(services, job.id, "done", "done", {"status": status, "text": text})


async def _cancelled(services: Services, job: GenerationJob, user: User, state: TurnState) -> None:
    lang = user.language or "fr"
    async with services.sessions() as db:
        row = await db.get(GenerationJob, job.id)
        if row is None or row.status in jobs.ENDED:
            return
    text = f"{fr_en(lang, *CANCELLED_NOTE)}\n{_done_steps(state, lang)}"
    await _say(services, job, user, text, "cancelled")
    await _close(services, job, jobs.CANCELLED, text)


async def _crashed(services: Services, job: GenerationJob, user: User, exc: Exception,
                   final: bool = False) -> None:
    """An unexpected error: tried again from the last saved step, then failed for good."""
    error = "".join(traceback.format_exception(exc))[-4000:]
    log.warning("background job failed: %s", exc, extra={"job_id": job.id, "attempt": job.attempts})
    if not final and job.attempts < MAX_JOB_ATTEMPTS:
        async with services.sessions() as db:
            row = await db.get(GenerationJob, job.id)
            if row is not None:
                row.error = error
                await db.commit()
        await services.jobs.aenqueue(job.id, delay_s=float(5 * job.attempts))
        return
    lang = user.language or "fr"
    what = fr_en(lang, "une erreur technique l'a interrompu", "a technical error stopped it")
    text = fr_en(lang, *FAILED_NOTE).format(what=what)
    await _say(services, job, user, text, "failed")
    await _close(services, job, jobs.FAILED, text, error=error)
