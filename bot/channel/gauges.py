"""The gauges of the work waiting, read from the database when /metrics is scraped.

The database is the truth of the queue (bot.pipeline.workers), so queue depth, the age of the oldest
pending message and background jobs by status are computed from it at scrape: any process serving
/metrics reports the deployment's values, whichever worker holds what.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC

from sqlalchemy import func, select

from bot import metrics
from bot.services import Services
from bot.storage.models import GenerationJob, InboundMessage

log = logging.getLogger("bot.channel.gauges")

SCRAPE_QUERY_S = 2.0  # a slow database leaves the last values rather than hold the scrape
_job_statuses: set[str] = set()  # statuses seen at a scrape: one gone from the table reads 0


async def _read(services: Services) -> None:
    async with services.sessions() as db:
        rows = (await db.execute(
            select(InboundMessage.status, func.count(InboundMessage.id))
            .where(InboundMessage.status.in_(("pending", "processing")))
            .group_by(InboundMessage.status))).all()
        oldest = await db.scalar(
            select(func.min(InboundMessage.created_at)).where(InboundMessage.status == "pending"))
        jobs = (await db.execute(
            select(GenerationJob.status, func.count(GenerationJob.id)).group_by(GenerationJob.status))).all()
    counts = {status: int(n) for status, n in rows}
    metrics.QUEUE_DEPTH.set(counts.get("pending", 0))
    metrics.IN_PROGRESS.set(counts.get("processing", 0))
    age = 0.0
    if oldest is not None:
        oldest = oldest if oldest.tzinfo is not None else oldest.replace(tzinfo=UTC)
        age = max(0.0, (services.clock() - oldest).total_seconds())
    metrics.OLDEST_PENDING.set(age)
    by_status = {status: int(n) for status, n in jobs}
    _job_statuses.update(by_status)
    for status in _job_statuses:
        metrics.BACKGROUND_JOBS.labels(status).set(by_status.get(status, 0))


_reading: set[asyncio.Task[None]] = set()


async def refresh(services: Services) -> None:
    """Sets the gauges from the database; when it fails or is slow they keep their last values.

    A slow read is left to finish rather than cancelled: a session cut half-way may hang when its
    connection goes back to the pool."""
    task = asyncio.create_task(_read(services))
    _reading.add(task)
    task.add_done_callback(_reading.discard)
    await asyncio.wait({task}, timeout=SCRAPE_QUERY_S)
    if not task.done():
        log.warning("queue gauges not refreshed in time")
    elif task.exception() is not None:
        log.warning("queue gauges not refreshed", extra={"error": repr(task.exception())[:300]})
