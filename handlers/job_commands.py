"""STATUT / STATUS: where the user's background job is (or, for a day after, how the last one
ended: its status, files and link); ANNULER / CANCEL: stop it.

Both answer at once from the database, without the model: a long job runs in the background and
these are how the user follows or stops it from the chat. The whole message must be the word
(any case, accents, spaces and punctuation around it aside): « annuler la réunion de demain » is a
request for the model, not a command.
"""

from __future__ import annotations

import re
from datetime import timedelta

import tools
from bot import jobs
from bot.channel.context import Incoming
from bot.channel.keywords import keyword
from bot.channel.links import job_page_url
from bot.storage.models import GenerationJob
from bot.web.job_page import job_files

# Both words in both languages: « status » is what many French speakers type too.
STATUS_WORDS = frozenset({"STATUT", "STATUS"})
CANCEL_WORDS = frozenset({"ANNULER", "CANCEL"})
# How long STATUT still shows a job that ended, when nothing runs: long enough to find its files
# again the next day, not so long that an old job hides that nothing is going on.
LAST_JOB_SHOWN = timedelta(days=1)


def command_word(text: str) -> str:
    """`keyword`, with any punctuation or symbol left on either side removed too (« ¿statut? »)."""
    return re.sub(r"^[\W_]+|[\W_]+$", "", keyword(text))


async def handle(msg: Incoming) -> bool:
    word = command_word(msg.text)
    if word in STATUS_WORDS:
        await _status(msg)
        return True
    if word in CANCEL_WORDS:
        await _cancel(msg)
        return True
    return False


def _others_line(msg: Incoming, others: int) -> str:
    return msg.t(f"➕ {others} autre{'s' if others > 1 else ''} en attente.",
                 f"➕ {others} more waiting.")


async def _file_names(msg: Incoming, job: GenerationJob) -> list[str]:
    ids = [i for i in job.result_files or [] if isinstance(i, int)]
    return [row.name for row in await job_files(msg.services, job, ids)]


async def _status(msg: Incoming) -> None:
    now = msg.services.clock()
    active = await jobs.active_jobs(msg.db, msg.user.id)
    job = active[0] if active else await jobs.last_ended_job(msg.db, msg.user.id, now - LAST_JOB_SHOWN)
    if job is None:
        await msg.reply(msg.t("Aucun travail en cours.", "No work in progress."))
        return
    text = jobs.status_text(job, await jobs.events(msg.db, job.id), msg.lang, now,
                            job_page_url(msg.services.settings, job.id), await _file_names(msg, job),
                            steps=tools.step_texts())
    if len(active) > 1:
        text += "\n" + _others_line(msg, len(active) - 1)
    await msg.reply(text)


async def _cancel(msg: Incoming) -> None:
    job = await jobs.active_job(msg.db, msg.user.id)
    # request_cancel writes in its own session: this one must hold no lock SQLite would wait on.
    await msg.db.commit()
    stopped = await jobs.request_cancel(msg.services, job.id) if job is not None else None
    if stopped is None:
        await msg.reply(msg.t("Aucun travail en cours à annuler.", "No work in progress to cancel."))
        return
    if stopped.status == jobs.CANCELLED:
        text = msg.t("🛑 Annulé : ce travail n'avait pas encore commencé.",
                     "🛑 Cancelled: that work had not started yet.")
    else:
        text = msg.t("🛑 J'arrête dès la fin de l'étape en cours…",
                     "🛑 Stopping as soon as the current step ends…")
    others = len(await jobs.active_jobs(msg.db, msg.user.id)) - (1 if stopped.status == jobs.RUNNING else 0)
    if others > 0:
        text += "\n" + _others_line(msg, others) + msg.t(" Renvoie ANNULER pour l'arrêter aussi.",
                                                         " Send CANCEL again to stop it too.")
    await msg.reply(text)
