"""Long work: a turn that outgrows its direct budget goes on as a background job.

The direct turn (handlers/turn/direct.py) runs with the whole background budget as its deadline
and `promote_at` = start + AGENT_TURN_TIMEOUT_S. Still working then, the loop stops before its next
step; `promote` saves its `TurnState` in a `GenerationJob`, tells the user once, and enqueues it
for a job worker (handlers/turn/job.py). A pro user who asks for it (« en arrière-plan ») is
promoted before the first step. A tool still running when the budget passes is not cut: the user is
told at once (`tell_long_work`), and the turn moves to the background before its next step.

The note carries the link to the job's live page. When it goes while a tool still works, the job's
row is made then (`jobs.STARTING`, which no worker runs) so that the link exists, and promotion
fills it; a turn that ends without promotion drops it (`drop_reserved`).
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

import tools
from bot import jobs
from bot.agent.loop import TurnState
from bot.channel.context import Incoming
from bot.channel.links import job_page_url
from bot.services import Services
from bot.storage.db import commit_writes
from bot.storage.models import GenerationJob
from bot.texts import fr_en

__all__ = ["LONG_WORK_NOTE", "QUEUED_NOTE", "background_asked", "drop_reserved", "promote",
           "tell_long_work", "with_link"]

log = logging.getLogger(__name__)

LONG_WORK_NOTE = (
    "⏳ C'est un long travail : je continue, et tout arrive ici dès que c'est prêt. "
    "STATUT pour voir où j'en suis.",
    "⏳ This is a long piece of work: I'll carry on and send you everything as soon as it's ready. "
    "Write STATUS to see where I am.",
)
QUEUED_NOTE = (
    "⏳ C'est un long travail : je le commence dès que le travail en cours est fini, et tout "
    "arrive ici dès que c'est prêt. STATUT pour voir où j'en suis.",
    "⏳ This is a long piece of work: I'll start it as soon as the current one is done and send you "
    "everything when it's ready. Write STATUS to see where I am.",
)
_BACKGROUND_ASKED = re.compile(r"\b(en\s+arri[eè]re[\s-]plan|in\s+the\s+background)\b", re.IGNORECASE)
_RESERVED = "long_work_job_id"  # msg.extra: the job row made for the note's link


def with_link(services: Services, text: str, job_id: int, lang: str) -> str:
    """`text` and, on a line of its own, the link to the job's live page."""
    return f"{text}\n{jobs.live_line(job_page_url(services.settings, job_id), lang)}"


def background_asked(msg: Incoming) -> bool:
    """A pro user asked for the work to run in the background from the start."""
    return (msg.user.mode or "guest") == "pro" and bool(_BACKGROUND_ASKED.search(msg.text or ""))


async def promote(msg: Incoming, state: TurnState) -> GenerationJob:
    """Turns the direct turn's saved state into a queued job, tells the user once, enqueues it."""
    services, user = msg.services, msg.user
    async with services.sessions() as db:
        ahead = await db.scalar(select(func.count(GenerationJob.id)).where(
            GenerationJob.user_id == user.id, GenerationJob.status.in_(jobs.ACTIVE)))
        job = await db.get(GenerationJob, msg.extra[_RESERVED]) if _RESERVED in msg.extra else None
        if job is None:
            job = await _new_job(db, msg, jobs.QUEUED)
        job.status, job.state, job.deadline_at = jobs.QUEUED, state.to_json(), _at(state.deadline)
        await db.commit()
    await _record_done_steps(services, job.id, state, user.language or "fr")
    if not msg.extra.get("long_work_told"):
        msg.extra["long_work_told"] = True
        note = fr_en(msg.lang, *(QUEUED_NOTE if ahead else LONG_WORK_NOTE))
        await msg.reply(with_link(services, note, job.id, msg.lang), kind="progress")
    await services.jobs.aenqueue(job.id)
    log.info("turn promoted to a background job", extra={"user_id": user.id, "job_id": job.id})
    return job


async def tell_long_work(msg: Incoming) -> None:
    """The direct budget passed while a tool still works: say now that the work goes on."""
    if msg.extra.get("long_work_told"):
        return
    msg.extra["long_work_told"] = True
    async with msg.services.sessions() as db:
        job = await _new_job(db, msg, jobs.STARTING)
        await db.commit()
    msg.extra[_RESERVED] = job.id
    note = with_link(msg.services, fr_en(msg.lang, *LONG_WORK_NOTE), job.id, msg.lang)
    await msg.reply(note, kind="progress")


async def drop_reserved(msg: Incoming) -> None:
    """The turn ended without going to the background: the row made for the note's link goes."""
    job_id = msg.extra.pop(_RESERVED, None)
    if job_id is None:
        return
    await commit_writes(msg.db)  # what the turn holds first (SQLite has one writer)
    async with msg.services.sessions() as db:
        job = await db.get(GenerationJob, job_id)
        if job is not None and job.status == jobs.STARTING:
            await db.delete(job)
            await db.commit()


async def _new_job(db: AsyncSession, msg: Incoming, status: str) -> GenerationJob:
    job = await jobs.create_job(
        db, user_id=msg.user.id, conversation_id=msg.conversation.id,
        inbound_id=msg.inbound.id if msg.inbound is not None else None, channel=msg.channel,
        request=(msg.text or "")[:2000], state=None, deadline_at=None, status=status,
    )
    return job


def _at(wall: float) -> datetime:
    return datetime.fromtimestamp(wall, UTC)


async def _record_done_steps(services: Services, job_id: int, state: TurnState, lang: str) -> None:
    """The steps the direct turn already did start the job's timeline."""
    for i, run in enumerate(state.tool_runs):
        label = jobs.step_label(tools.step_of(run["name"]), lang)
        key = f"{run['n']}:direct{i}"
        await jobs.record_event(services, job_id, f"{key}:start", "tool_start",
                                {"name": run["name"], "label": label, "n": run["n"], "call_id": f"direct{i}"})
        await jobs.record_event(services, job_id, f"{key}:end", "tool_end",
                                {"name": run["name"], "label": label, "status": run["status"],
                                 "duration_ms": run["duration_ms"], "call_id": f"direct{i}"})
