"""Long work: a turn that outgrows its direct budget goes on as a background job.

Promotion: the direct turn (handlers/agent_turn.py) runs with the whole background budget as its
deadline and `promote_at` = start + AGENT_TURN_TIMEOUT_S. Still working then, the loop stops
before its next step; `promote` saves its `TurnState` in a `GenerationJob`, tells the user once,
and enqueues it. A pro user who asks for it (« en arrière-plan ») is promoted before the first step.

`run_job` is what a job worker runs (bot/pipeline/jobs.py passes it the job's id, under the job's
lease): it resumes the saved state step by step, saving it after each, so a worker killed mid-job
is replaced by another that starts again from the last saved step. A step run again neither sends
twice (each step's messages carry outbox keys `job:<id>:<step>:<n>`), nor charges twice (one
ledger ref per model call, numbered in the state), nor repeats a side effect (the tool-effect keys
of the message's turn, whose positions the state carries on). The user's other messages are
answered meanwhile: a job holds no user lock. A second long request waits behind the first.
"""

from __future__ import annotations

import logging
import re
import traceback
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update

from bot import logs
from bot.agent import history
from bot.agent.effects import EffectStore
from bot.agent.llm import prompt_cache_key
from bot.agent.loop import CANCELLED as LOOP_CANCELLED
from bot.agent.loop import PROVIDER_ERROR, Budget, TurnState, run_turn
from bot.agent.sse import ToolCall
from bot.agent.toolspec import Tool, ToolContext
from bot.capabilities import credits, jobs
from bot.capabilities.quiz import redact_tool_arguments
from bot.channel.context import Incoming
from bot.channel.outbound import SendKeys, current_keys, send_to_user
from bot.clock import system_now
from bot.services import Services
from bot.storage.models import Conversation, GenerationJob, InboundMessage, User, UserFile

log = logging.getLogger(__name__)

LONG_WORK_NOTE = (
    "⏳ C'est un long travail : je continue et je t'envoie tout dès que c'est prêt. "
    "Écris STATUT pour voir où j'en suis.",
    "⏳ This is a long piece of work: I'll carry on and send you everything as soon as it's ready. "
    "Write STATUS to see where I am.",
)
QUEUED_NOTE = (
    "⏳ C'est un long travail : je le commence dès que le travail en cours est fini, et je t'envoie "
    "tout dès que c'est prêt. Écris STATUT pour voir où j'en suis.",
    "⏳ This is a long piece of work: I'll start it as soon as the current one is done and send you "
    "everything when it's ready. Write STATUS to see where I am.",
)
FAILED_NOTE = (
    "❌ Désolé, je n'ai pas pu finir ce travail : {what}. Ce qui était prêt t'a été envoyé ; "
    "redemande-le-moi pour recommencer.",
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
_BACKGROUND_ASKED = re.compile(r"\b(en\s+arri[eè]re[\s-]plan|in\s+the\s+background)\b", re.IGNORECASE)


def _t(lang: str, texts: tuple[str, str]) -> str:
    return texts[1] if lang == "en" else texts[0]


def background_asked(msg: Incoming) -> bool:
    """A pro user asked for the work to run in the background from the start."""
    return (msg.user.mode or "guest") == "pro" and bool(_BACKGROUND_ASKED.search(msg.text or ""))


def can_promote(services: Services) -> bool:
    return getattr(services, "jobs", None) is not None


# --- promotion ------------------------------------------------------------------------------


async def promote(msg: Incoming, state: TurnState) -> GenerationJob:
    """Turns the direct turn's saved state into a queued job, tells the user once, enqueues it."""
    services, user = msg.services, msg.user
    async with services.sessions() as db:
        ahead = await db.scalar(select(func.count(GenerationJob.id)).where(
            GenerationJob.user_id == user.id, GenerationJob.status.in_(jobs.ACTIVE)))
        job = await jobs.create_job(
            db, user_id=user.id, conversation_id=msg.conversation.id,
            inbound_id=msg.inbound.id if msg.inbound is not None else None, channel=msg.channel,
            request=(msg.text or "")[:2000], state=state.to_json(),
            deadline_at=_at(state.deadline),
        )
        await db.commit()
    await _record_done_steps(services, job.id, state, user.language or "fr")
    if not msg.extra.get("long_work_told"):
        msg.extra["long_work_told"] = True
        await msg.reply(_t(msg.lang, QUEUED_NOTE if ahead else LONG_WORK_NOTE), kind="progress")
    await services.jobs.aenqueue(job.id)
    log.info("turn promoted to a background job", extra={"user_id": user.id, "job_id": job.id})
    return job


async def tell_long_work(msg: Incoming) -> None:
    """The direct budget passed while a tool still works: say now that the work goes on."""
    if msg.extra.get("long_work_told"):
        return
    msg.extra["long_work_told"] = True
    await msg.reply(_t(msg.lang, LONG_WORK_NOTE), kind="progress")


def _at(wall: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(wall, UTC)


async def _record_done_steps(services: Services, job_id: int, state: TurnState, lang: str) -> None:
    """The steps the direct turn already did start the job's timeline."""
    for i, run in enumerate(state.tool_runs):
        label = jobs.step_label(run["name"], lang)
        key = f"{run['n']}:direct{i}"
        await jobs.record_event(services, job_id, f"{key}:start", "tool_start",
                                {"name": run["name"], "label": label, "n": run["n"], "call_id": f"direct{i}"})
        await jobs.record_event(services, job_id, f"{key}:end", "tool_end",
                                {"name": run["name"], "label": label, "status": run["status"],
                                 "duration_ms": run["duration_ms"], "call_id": f"direct{i}"})


# --- running a job --------------------------------------------------------------------------


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
        if not taken.rowcount:  # type: ignore[attr-defined]
            return None
        await db.refresh(job)
    await jobs.record_event(services, job.id, f"status:running:{job.attempts}", "status",
                            {"status": jobs.RUNNING})
    return job, user, conversation


def _tools(services: Services, user: User, state: TurnState) -> tuple[list[Tool], frozenset[str]]:
    """The tools the turn was offered when it began (the state keeps their names)."""
    import tools

    names = set(state.tool_names)
    offered = [t for t in tools.offered(services, user.mode or "guest") if t.name in names]
    return offered, tools.known_names(offered)


class _JobTurn:
    """The job's side of the loop: its tools' context, its sends, its timeline, its charges."""

    def __init__(self, services: Services, job: GenerationJob, user: User, state: TurnState) -> None:
        self.services, self.job, self.user, self.state = services, job, user, state
        self.lang = user.language or "fr"
        self.handed_back = False

    async def deliver(self, text: str = "", media: UserFile | None = None) -> Any:
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
        return ToolContext(
            services=self.services, user_id=self.user.id, conversation_id=self.job.conversation_id,
            channel=self.job.channel, mode=self.user.mode or "guest", language=self.lang,
            tool_call_id=call.id, deliver=self.deliver, progress=None,
            extra={"inbound_id": self.job.inbound_id, "job_id": self.job.id},
        )

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

    async def budget(self) -> Budget | None:
        """What the user's balance still pays for; each model call charged once, by its number."""
        if (self.user.mode or "guest") == "guest":
            return None
        settings, state = self.services.settings, self.state
        per = max(1, settings.tokens_per_credit)
        async with self.services.sessions() as db:
            current = await credits.balance(db, self.user.id)
        ceiling = state.charged_tokens + max(0, current + max(0, settings.turn_overdraft_credits)) * per
        # Never past what is left of the user's day (USER_DAILY_TOKEN_LIMIT), counted into it.
        daily = credits.daily_tokens(self.services.state, settings, self.user, self.services.clock())
        today = state.charged_tokens + (await daily.left() if daily is not None else 0)

        async def spend(tokens: int) -> None:
            # state.charged_tokens already counts this call (`tokens`, cached ones at their factor).
            charged = state.charged_tokens
            before = credits.turn_cost(charged - tokens, per) if charged > tokens else 0
            due = credits.turn_cost(charged, per) - before
            if due > 0:
                async with self.services.sessions() as db:
                    await credits.apply(db, self.user.id, -due, "usage", call_ref())
                    await db.commit()

        def call_ref() -> str:
            return f"job:{self.job.id}:call:{state.model_calls}"

        return credits.within_today(ceiling, spend, daily, today, call_ref)

    async def timeline(self, event: dict[str, Any]) -> None:
        """The loop's tool events become the job's timeline (and its current step)."""
        kind, n = event["type"], event.get("n", self.state.iteration)
        call_id = event.get("tool_call_id", "")
        label = jobs.step_label(event.get("name", ""), self.lang)
        if kind == "tool_start":
            await jobs.record_event(self.services, self.job.id, f"{n}:{call_id}:start", kind,
                                    {"name": event["name"], "label": label, "n": n, "call_id": call_id})
            async with self.services.sessions() as db:
                row = await db.get(GenerationJob, self.job.id)
                if row is not None:
                    row.step = label[:200]
                    await db.commit()
        elif kind == "tool_end":
            await jobs.record_event(self.services, self.job.id, f"{n}:{call_id}:end", kind,
                                    {"name": event["name"], "label": label, "status": event.get("status"),
                                     "duration_ms": event.get("duration_ms"), "call_id": call_id})
        elif kind == "tool_progress":
            await jobs.record_event(self.services, self.job.id, f"{self.state.iteration}:progress",
                                    kind, {"name": event.get("name", ""), "note": event.get("note", "")})


async def _drive(services: Services, side: _JobTurn) -> tuple[Any, str]:
    """Runs the loop from the saved state to its end; (outcome, the answer's text)."""
    job, user, state = side.job, side.user, side.state
    offered, known = _tools(services, user, state)
    effects = (EffectStore(services.sessions, user.id, job.inbound_id, state.effects_from, services.clock)
               if job.inbound_id is not None else None)
    events = run_turn(
        services.llm, state=state, tools=offered, known_names=known, mode=user.mode or "guest",
        language=user.language or "fr", make_context=side.make_context, limits=services.settings.limits,
        context_tokens=services.settings.llm_context_tokens, redact_arguments=redact_tool_arguments,
        budget=await side.budget(), effects=effects, save=side.save, should_stop=side.should_stop,
        cache_key=prompt_cache_key(services.settings.secret_key, user.id),
    )
    outcome, answer = None, ""
    keys = None
    try:
        async for event in events:
            kind = event["type"]
            if kind == "step":
                # This step's sends are numbered by the job and the step: a replay finds them sent.
                if keys is not None:
                    current_keys.reset(keys)
                keys = current_keys.set(SendKeys(f"job:{job.id}:{event['n']}"))
            elif kind == "text":
                answer = event["text"]
            elif kind in ("tool_start", "tool_end", "tool_progress"):
                await side.timeline(event)
            elif kind == "final":
                outcome = event["outcome"]
    finally:
        if keys is not None:
            current_keys.reset(keys)
    return outcome, answer


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
    sent = await _say(services, job, user, answer, "final")
    async with services.sessions() as db:
        await history.save(db, conversation.id, [{"role": "assistant", "content": answer}], job.inbound_id)
        await db.commit()
    await _close(services, job, status, answer, result_text=answer, state=state.to_json(),
                 error="provider_error" if failed else None)
    log.info("background job ended: %s (%s)", status, outcome.exit_reason,
             extra={"job_id": job.id, "user_id": user.id, "delivered": getattr(sent, "ok", None)})


def _done_steps(state: TurnState, lang: str) -> str:
    lines = [f"✅ {jobs.step_label(r['name'], lang)}" for r in state.tool_runs if r.get("status") == "ok"]
    if not lines:
        return _t(lang, NOTHING_DONE)
    return "\n".join([_t(lang, DONE_SO_FAR), *lines])


async def _say(services: Services, job: GenerationJob, user: User, text: str, what: str) -> Any:
    """Sends the job's closing message once: its outbox key names the job and what it says."""
    token = current_keys.set(SendKeys(f"job:{job.id}:{what}"))
    try:
        return await send_to_user(services, user, text=text, channel=job.channel, kind="reply")
    finally:
        current_keys.reset(token)


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
    text = f"{_t(lang, CANCELLED_NOTE)}\n{_done_steps(state, lang)}"
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
    what = _t(lang, ("une erreur technique l'a interrompu", "a technical error stopped it"))
    text = _t(lang, FAILED_NOTE).format(what=what)
    await _say(services, job, user, text, "failed")
    await _close(services, job, jobs.FAILED, text, error=error)
