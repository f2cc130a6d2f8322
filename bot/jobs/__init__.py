"""Background jobs' records: the `generation_jobs` row, its timeline (`job_events`), and the texts a
user reads about it (STATUT, the label of each step).

A turn too long for AGENT_TURN_TIMEOUT_S goes on as a job; the row is the truth about it, the
events are its timeline. Each event is stored once per key (a replayed step re-uses its keys, so
it is not written twice) and, once committed, published on `progress_channel(job_id)` for the
live page. Publishing is best effort: a page that missed an event reads it again from the table.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import case, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from bot.agent.toolspec import StepText
from bot.jobs.errors import JobError
from bot.services import Services
from bot.storage.db import rowcount
from bot.storage.models import GenerationJob, JobEvent, User
from bot.storage.state import is_unavailable
from bot.texts import fr_en

__all__ = ["ACTIVE", "CANCELLED", "COMPLETED", "ENDED", "FAILED", "QUEUED", "RUNNING", "STARTING", "JobError",
           "active_job", "active_jobs", "create_job", "duration_text", "event_dict", "events",
           "last_ended_job", "live_line", "progress_channel", "record_event", "request_cancel", "status_text",
           "step_label", "user_jobs_ahead"]

log = logging.getLogger(__name__)

QUEUED, RUNNING, COMPLETED, FAILED, CANCELLED = "queued", "running", "completed", "failed", "cancelled"
# The row of a turn told it goes to the background while its tool still runs: it exists so that
# the ⏳ note can carry the page's link; promotion makes it queued. Neither active nor ended.
STARTING = "starting"
ACTIVE = (QUEUED, RUNNING)
ENDED = (COMPLETED, FAILED, CANCELLED)


def progress_channel(job_id: int) -> str:
    return f"job:{job_id}:progress"


# --- rows ----------------------------------------------------------------------------------------


async def create_job(db: AsyncSession, *, user_id: int, conversation_id: int, inbound_id: int | None,
                     channel: str, request: str, state: dict[str, Any] | None,
                     deadline_at: datetime | None, created_at: datetime | None = None,
                     status: str = QUEUED) -> GenerationJob:
    """A queued job (or STARTING); added and flushed (it has its id), the caller commits."""
    job = GenerationJob(user_id=user_id, conversation_id=conversation_id, inbound_id=inbound_id,
                        channel=channel, request=request, status=status, state=state,
                        deadline_at=deadline_at, cancel_requested=False, attempts=0)
    if created_at is not None:
        job.created_at = created_at
    db.add(job)
    await db.flush()
    return job


async def active_jobs(db: AsyncSession, user_id: int) -> list[GenerationJob]:
    """The user's queued and running jobs: running first, then the oldest queued."""
    running_first = case((GenerationJob.status == RUNNING, 0), else_=1)
    query = (select(GenerationJob)
             .where(GenerationJob.user_id == user_id, GenerationJob.status.in_(ACTIVE))
             .order_by(running_first, GenerationJob.created_at, GenerationJob.id))
    return list((await db.scalars(query)).all())


async def active_job(db: AsyncSession, user_id: int) -> GenerationJob | None:
    """The job STATUT and ANNULER are about: the running one, else the oldest queued."""
    jobs = await active_jobs(db, user_id)
    return jobs[0] if jobs else None


async def last_ended_job(db: AsyncSession, user_id: int, since: datetime) -> GenerationJob | None:
    """The user's job that ended last, if it ended after `since`: what STATUT shows once idle."""
    query = (select(GenerationJob)
             .where(GenerationJob.user_id == user_id, GenerationJob.status.in_(ENDED),
                    GenerationJob.finished_at >= since)
             .order_by(GenerationJob.finished_at.desc(), GenerationJob.id.desc()).limit(1))
    return (await db.scalars(query)).first()


async def user_jobs_ahead(db: AsyncSession, job: GenerationJob) -> int:
    """How many other active jobs of the same user were created before `job`."""
    earlier = (GenerationJob.created_at < job.created_at) | (
        (GenerationJob.created_at == job.created_at) & (GenerationJob.id < job.id))
    query = select(func.count(GenerationJob.id)).where(
        GenerationJob.user_id == job.user_id, GenerationJob.status.in_(ACTIVE),
        GenerationJob.id != job.id, earlier)
    return int(await db.scalar(query) or 0)


# --- events --------------------------------------------------------------------------------------


def event_dict(row: JobEvent) -> dict[str, Any]:
    """The shape stored events are served and published in: id, type, at, then the data."""
    data = {k: v for k, v in (row.data or {}).items() if k not in ("id", "type", "at")}
    return {"id": row.id, "type": row.type, "at": row.created_at.astimezone(UTC).isoformat(), **data}


async def record_event(services: Services, job_id: int, key: str, type: str,
                       data: dict[str, Any]) -> dict[str, Any] | None:
    """Stores the event unless this job already has `key`, then publishes it. Its own session, so
    the event is visible (and published) at once, whatever the caller's transaction does. None
    when the key existed: nothing is stored or published twice."""
    async with services.sessions() as db:
        row = JobEvent(job_id=job_id, key=key, type=type, data=data, created_at=services.clock())
        db.add(row)
        try:
            await db.commit()
        except IntegrityError:
            await db.rollback()
            return None
        event = event_dict(row)
    try:
        await services.state.publish(progress_channel(job_id), json.dumps(event, ensure_ascii=False))
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        # Stored is what counts: a page that was watching reads it again when it reconnects.
        log.warning("job %s event %s not published: shared state unavailable", job_id, key)
    return event


async def events(db: AsyncSession, job_id: int, after_id: int = 0) -> list[dict[str, Any]]:
    """The job's stored events with an id above `after_id`, in id order."""
    query = select(JobEvent).where(JobEvent.job_id == job_id, JobEvent.id > after_id).order_by(JobEvent.id)
    return [event_dict(row) for row in (await db.scalars(query)).all()]


# --- cancelling ----------------------------------------------------------------------------------


async def request_cancel(services: Services, job_id: int) -> GenerationJob | None:
    """ANNULER. A queued job is cancelled at once (status, finished_at, its `status` and `done`
    events); a running one gets `cancel_requested`, and its runner stops before the next step.
    Conditional updates, so a worker starting the job at the same moment is not overwritten.
    Returns the job as it now is, or None when there is no such job or it had already ended."""
    now = services.clock()
    async with services.sessions() as db:
        cancelled = await db.execute(
            update(GenerationJob).where(GenerationJob.id == job_id, GenerationJob.status == QUEUED)
            .values(status=CANCELLED, cancel_requested=True, finished_at=now))
        flagged = None
        if rowcount(cancelled) == 0:
            flagged = await db.execute(
                update(GenerationJob).where(GenerationJob.id == job_id, GenerationJob.status == RUNNING)
                .values(cancel_requested=True))
        await db.commit()
        job = await db.get(GenerationJob, job_id, populate_existing=True)
        if job is None or (flagged is not None and rowcount(flagged) == 0):
            return None
        user = await db.get(User, job.user_id)
    if job.status == CANCELLED:
        text = fr_en(user.language if user is not None else None,
                     "Annulé sur demande avant d'avoir commencé.",
                     "Cancelled at your request before it started.")
        await record_event(services, job_id, f"status:{CANCELLED}:{job.attempts}", "status",
                           {"status": CANCELLED})
        await record_event(services, job_id, "done", "done", {"status": CANCELLED, "text": text})
    return job


# --- what the user reads -------------------------------------------------------------------------

# A tool's step text is the tool's own (`Tool.step`, in tools/<name>.py): bot never imports tools, so
# the callers hand it over, and STATUT gets each tool's by name.
_GENERIC_STEP = StepText("⚙️", "Traitement en cours", "Working on it")


def step_label(step: StepText | None, lang: str) -> str:
    """« 📊 Génération du tableur Excel… »: what a step does, as the user reads it (the generic
    « ⚙️ Traitement en cours… » for a tool without a step text)."""
    shown = step or _GENERIC_STEP
    return f"{shown.emoji} {fr_en(lang, shown.fr, shown.en)}…"


def duration_text(seconds: float) -> str:
    """`12 s`, `3 min 05 s`, `1 h 02 min`: short enough for an SMS line."""
    total = max(0, round(seconds))
    if total < 60:
        return f"{total} s"
    if total < 3600:
        return f"{total // 60} min {total % 60:02d} s"
    return f"{total // 3600} h {total % 3600 // 60:02d} min"


@dataclass
class _Step:
    label: str
    ok: bool
    seconds: float
    count: int = 1


def _label(event: dict[str, Any], lang: str, steps: Mapping[str, StepText]) -> str:
    step = steps.get(str(event.get("name") or ""))
    return step_label(step, lang) if step is not None else str(event.get("label") or step_label(None, lang))


def _steps(events: Sequence[dict[str, Any]], lang: str,
           steps: Mapping[str, StepText]) -> tuple[list[_Step], str | None]:
    """The finished steps (the same step done again is one line, counted) and the label of the
    step that started last and has not ended."""
    done: dict[str, _Step] = {}
    started: dict[tuple[Any, Any], str] = {}
    for event in events:
        ident = (event.get("n"), event.get("call_id"))
        if event.get("type") == "tool_start":
            started[ident] = _label(event, lang, steps)
        elif event.get("type") == "tool_end":
            started.pop(ident, None)
            label = _label(event, lang, steps).removesuffix("…")
            ok = event.get("status", "ok") == "ok"
            seconds = float(event.get("duration_ms") or 0) / 1000
            step = done.get(f"{label}:{ok}")
            if step is None:
                done[f"{label}:{ok}"] = _Step(label, ok, seconds)
            else:
                step.count, step.seconds = step.count + 1, step.seconds + seconds
    return list(done.values()), (list(started.values())[-1] if started else None)


_MAX_STEP_LINES = 8


def _step_lines(steps: list[_Step], lang: str) -> list[str]:
    lines = [f"{'✅' if s.ok else '⚠️'} {s.label}{f' ×{s.count}' if s.count > 1 else ''} — "
             f"{duration_text(s.seconds)}" for s in steps]
    if len(lines) > _MAX_STEP_LINES:
        hidden = len(lines) - _MAX_STEP_LINES + 1
        more = fr_en(lang, f"… +{hidden} étapes", f"… +{hidden} steps")
        lines = [more, *lines[-(_MAX_STEP_LINES - 1):]]
    return lines


def _head(job: GenerationJob, current: str | None, lang: str) -> list[str]:
    if job.status == QUEUED:
        return [fr_en(lang, "🕒 En attente de démarrage.", "🕒 Waiting to start.")]
    if job.status == RUNNING:
        step = job.step or current or fr_en(lang, "🤔 Réflexion…", "🤔 Thinking…")
        lines = [fr_en(lang, f"⏳ En cours : {step}", f"⏳ Now: {step}")]
        if job.cancel_requested:
            lines.append(fr_en(lang, "🛑 Arrêt demandé : je m'arrête après cette étape.",
                               "🛑 Stopping after this step."))
        return lines
    ended = {COMPLETED: ("✅ Terminé.", "✅ Done."), FAILED: ("❌ Échec.", "❌ Failed."),
             CANCELLED: ("🛑 Annulé.", "🛑 Cancelled.")}
    fr_text, en_text = ended.get(job.status, (job.status, job.status))
    return [fr_en(lang, fr_text, en_text)]


def _elapsed_line(job: GenerationJob, now: datetime, lang: str) -> str:
    if job.status == QUEUED:
        spent = duration_text((now - job.created_at).total_seconds())
        return fr_en(lang, f"⏱️ En attente depuis {spent}", f"⏱️ Waiting for {spent}")
    start = job.started_at or job.created_at
    end = job.finished_at if job.status in ENDED and job.finished_at else now
    spent = duration_text((end - start).total_seconds())
    if job.status in ENDED:
        return fr_en(lang, f"⏱️ Durée : {spent}", f"⏱️ Took {spent}")
    return fr_en(lang, f"⏱️ Depuis {spent}", f"⏱️ Running for {spent}")


def live_line(link: str, lang: str) -> str:
    """The line that carries a job's page link, in STATUT, the ⏳ note and the job's answer."""
    return fr_en(lang, f"🔗 En direct : {link}", f"🔗 Live: {link}")


def status_text(job: GenerationJob, events: list[dict[str, Any]], lang: str, now: datetime, link: str,
                files: Sequence[str] = (), *, steps: Mapping[str, StepText]) -> str:
    """The STATUT answer, for a phone screen or an SMS: where the job is, the steps done with
    their durations, the time spent, the files made, and the live page's link. Each thing said once.
    `steps` are the tools' step texts by name: a tool's step is told in `lang`, whatever the
    language its event was recorded in."""
    done, current = _steps(events, lang, steps)
    lines = [*_head(job, current, lang), *_step_lines(done, lang), _elapsed_line(job, now, lang)]
    if files:
        lines.append(fr_en(lang, "📎 Fichiers : ", "📎 Files: ") + ", ".join(files))
    lines.append(live_line(link, lang))
    return "\n".join(lines)
