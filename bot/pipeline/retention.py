"""Retention: what people wrote, were sent and uploaded is deleted once older than RETENTION_DAYS.

Purged: `messages` (the history the model sees), `inbound_messages` (the webhook payloads: body,
params, media), `outbound_messages` (what was sent), `tool_effects` (stored tool results),
background jobs that have ended (`generation_jobs`: their saved turn and answer, and their
`job_events`) and `user_files` (the row and its bytes in the file store). Kept: users,
conversations, the credit ledger (`credit_entries`, `payments`), exercise results, tasks, turn
records (counts, no text).

Conversations keep working: bot.agent.history already drops a tool result whose call is gone and gives a
call whose result is gone an "interrupted" result, so a cut through a turn loads fine.

The newest inbound row is never deleted, only emptied: SQLite gives a new row the highest id + 1,
and the ledger refers to turns by inbound id (`turn:<id>:<attempt>`), so an id must never come back.

The job (`retention_jobs`) runs in one process per period (the period's key: bot.periodic),
and every step is idempotent, so a tick cut short, or two at once (one that ran past its period),
does no harm. Rows
go in batches, each its own short transaction (SQLite has one writer), at most `_MAX_BATCHES` per
table per tick: a backlog is worked off over a few ticks. A file's bytes go before its row, so a
failure leaves the row to be tried again next tick, never bytes nobody can find.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, update

from bot.periodic import Job
from bot.services import Services
from bot.storage.db import rowcount
from bot.storage.models import (
    GenerationJob,
    InboundMessage,
    JobEvent,
    Message,
    OutboundMessage,
    ToolEffect,
    UserFile,
)

log = logging.getLogger("bot.pipeline.retention")

_BATCH = 500
_MAX_BATCHES = 40
# Inbound rows still being worked on are left alone, however old (they end as done or failed).
_IN_FLIGHT = ("pending", "processing", "delivering")  # an answer still waits in the outbox
RETENTION_INTERVAL_S = 3600.0


@dataclass
class PurgeReport:
    cutoff: datetime
    deleted: dict[str, int] = field(default_factory=dict)
    files_left: list[str] = field(default_factory=list)  # bytes that could not be deleted this tick

    @property
    def total(self) -> int:
        return sum(self.deleted.values())


def cutoff_for(services: Services, now: datetime) -> datetime:
    return now - timedelta(days=services.settings.retention_days)


async def _delete_old(services: Services, model: Any, cutoff: datetime, *extra: Any) -> int:
    """Deletes rows of `model` created before `cutoff` (and matching `extra`), oldest first; returns
    how many this call deleted (another process purging at the same time deletes the others)."""
    total = 0
    for _ in range(_MAX_BATCHES):
        async with services.sessions() as db:
            ids = list(await db.scalars(
                select(model.id).where(model.created_at < cutoff, *extra).order_by(model.id).limit(_BATCH)
            ))
            if ids:
                result = await db.execute(delete(model).where(model.id.in_(ids))
                                          .execution_options(synchronize_session=False))
                await db.commit()
                total += rowcount(result)
        if len(ids) < _BATCH:
            break
    return total


async def _purge_inbound(services: Services, cutoff: datetime) -> int:
    """Old inbound rows, except the newest one (emptied instead, see the module's docstring)."""
    async with services.sessions() as db:
        newest = await db.scalar(select(func.max(InboundMessage.id)))
    if newest is None:
        return 0
    deleted = await _delete_old(services, InboundMessage, cutoff, InboundMessage.id < newest,
                                InboundMessage.status.not_in(_IN_FLIGHT))
    async with services.sessions() as db:
        emptied = await db.execute(
            update(InboundMessage)
            .where(InboundMessage.id == newest, InboundMessage.created_at < cutoff,
                   InboundMessage.status.not_in(_IN_FLIGHT), InboundMessage.from_addr != "")
            .values(body="", params=None, media=None, error=None, from_addr="", to_addr=None)
        )
        await db.commit()
    return deleted + rowcount(emptied)


async def _purge_files(services: Services, cutoff: datetime, report: PurgeReport) -> int:
    """Old files: the bytes first, then the rows whose bytes are gone. A class's library is the
    school's teaching, not a person's data: kept for as long as the class."""
    total = 0
    for _ in range(_MAX_BATCHES):
        async with services.sessions() as db:
            rows = (await db.execute(
                select(UserFile.id, UserFile.storage_key)
                .where(UserFile.created_at < cutoff, UserFile.cohort_id.is_(None))
                .order_by(UserFile.id).limit(_BATCH)
            )).all()
        gone: list[int] = []
        for file_id, key in rows:
            # Deleting bytes already gone is fine (missing_ok): another process may be at the same row.
            try:
                await services.files.delete(key)
                gone.append(file_id)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("file bytes not deleted at retention", extra={"storage_key": key})
                report.files_left.append(key)
        if gone:
            async with services.sessions() as db:
                result = await db.execute(delete(UserFile).where(UserFile.id.in_(gone))
                                          .execution_options(synchronize_session=False))
                await db.commit()
                total += rowcount(result)
        if len(rows) < _BATCH or not gone:
            break
    return total


async def purge(services: Services, now: datetime) -> PurgeReport:
    """Deletes everything older than RETENTION_DAYS before `now`; returns what went."""
    report = PurgeReport(cutoff=cutoff_for(services, now))
    cutoff = report.cutoff
    report.deleted["user_files"] = await _purge_files(services, cutoff, report)
    report.deleted["messages"] = await _delete_old(services, Message, cutoff)
    report.deleted["inbound_messages"] = await _purge_inbound(services, cutoff)
    report.deleted["outbound_messages"] = await _delete_old(services, OutboundMessage, cutoff)
    report.deleted["tool_effects"] = await _delete_old(services, ToolEffect, cutoff)
    report.deleted["job_events"] = await _delete_old(services, JobEvent, cutoff)
    # A job still running is left alone, however old (it ends within AGENT_BACKGROUND_TIMEOUT_S);
    # a "starting" row that old is one whose turn died before promoting it.
    report.deleted["generation_jobs"] = await _delete_old(
        services, GenerationJob, cutoff,
        GenerationJob.status.in_(("completed", "failed", "cancelled", "starting")))
    if report.total or report.files_left:
        log.info("retention purge", extra={"cutoff": cutoff.isoformat(), **report.deleted,
                                           "files_left": len(report.files_left)})
    return report


async def _retention_tick(services: Services, now: datetime) -> None:
    await purge(services, now)


def retention_jobs(interval_s: float = RETENTION_INTERVAL_S) -> list[Job]:
    """For the composition root: the hourly purge of data older than RETENTION_DAYS."""
    return [Job(name="retention_purge", interval_s=interval_s, fn=_retention_tick)]
