"""A flag nobody acknowledged is sent again to the admins: a person must have seen it.

A periodic job looks for flags open for SAFETY_ESCALATE_AFTER_S (0: never) that were not escalated
yet, and e-mails each to the admins and SAFETY_ALERT_EMAILS once more (bot.safety.notify's e-mail,
as a reminder that says for how long it has been open, without the child's words nor anything the
sender chose). Once per flag: the job claims a flag by an atomic UPDATE of `escalated_at`, so two
workers running it at once never both send. As for the first alert, an e-mail the mail server
refuses is logged and not tried again; without SMTP nothing is claimed, so the reminders go once
it is configured.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, select, update

from bot.channel.email import smtp_configured
from bot.periodic import Job
from bot.safety.notify import notify, recipients
from bot.services import Services
from bot.storage.db import rowcount
from bot.storage.models import SafetyFlag, User

__all__ = ["JOB_NAME", "escalate_open_flags", "escalation_jobs"]

log = logging.getLogger(__name__)

JOB_NAME = "safety_escalation"
BATCH = 100  # flags per tick; the next tick takes the rest


def _still_unseen() -> tuple[ColumnElement[bool], ColumnElement[bool]]:
    return SafetyFlag.acknowledged_at.is_(None), SafetyFlag.escalated_at.is_(None)


async def _claim(services: Services, flag_id: int, now: datetime) -> bool:
    async with services.sessions() as db:
        result = await db.execute(update(SafetyFlag).where(SafetyFlag.id == flag_id, *_still_unseen())
                                  .values(escalated_at=now))
        await db.commit()
        return rowcount(result) == 1


async def _escalate(services: Services, flag_id: int, now: datetime) -> int:
    """E-mails one claimed flag to the admins; how many e-mails the mail server accepted."""
    async with services.sessions() as db:
        flag = await db.get(SafetyFlag, flag_id)
        student = await db.get(User, flag.user_id) if flag is not None else None
        if flag is None or student is None:
            return 0
        everyone = await recipients(db, services, student.id)
    to = dataclasses.replace(everyone, teachers=())  # teachers were told; the admins answer for it
    return await notify(services, flag, student, to, open_for=(now - flag.created_at).total_seconds())


async def escalate_open_flags(services: Services, now: datetime) -> int:
    """The periodic job's work: each flag open past SAFETY_ESCALATE_AFTER_S sent again, once;
    returns how many flags were escalated."""
    after_s = services.settings.safety.safety_escalate_after_s
    if not after_s or smtp_configured(services.settings) is not None:
        return 0
    async with services.sessions() as db:
        due = (await db.scalars(select(SafetyFlag.id).where(
            *_still_unseen(), SafetyFlag.created_at <= now - timedelta(seconds=after_s))
            .order_by(SafetyFlag.created_at, SafetyFlag.id).limit(BATCH))).all()
    escalated = 0
    for flag_id in due:
        if not await _claim(services, flag_id, now):
            continue  # acknowledged meanwhile, or another worker has it
        sent = await _escalate(services, flag_id, now)
        log.info("safety flag escalated", extra={"flag_id": flag_id, "sent": sent})
        escalated += 1
    return escalated


async def _job(services: Services, now: datetime) -> None:
    await escalate_open_flags(services, now)


def escalation_jobs(interval_s: float = 300) -> list[Job]:
    """For the composition root: the job that reminds the admins of flags left open."""
    return [Job(name=JOB_NAME, interval_s=interval_s, fn=_job)]
