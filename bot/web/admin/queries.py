"""What the dashboard reads, within what its viewer may see: an admin everything, a teacher only the
students of their classes. Every query is bounded (a period, a class, one student) so a school of
5,000 students and a year of results stays fast (`python -m bench.dashboard`). No query here reads
a message's text: the pages show counts, levels, mastery and results, never conversations (the open
safety flags too: how many and since when)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.billing.costs import CostLine, cost_lines
from bot.config import Settings
from bot.safety import OpenFlags, open_among
from bot.storage.models import (
    Cohort,
    CohortMember,
    CreditEntry,
    GenerationJob,
    InboundMessage,
    OutboundMessage,
    TurnRecord,
    User,
)
from bot.web.admin.auth import Viewer

PERIOD_DAYS = 30
FAILED = ("failed", "undelivered")


@dataclass(frozen=True)
class DayCount:
    day: str  # YYYY-MM-DD (UTC)
    inbound: int
    outbound: int


@dataclass(frozen=True)
class CohortSummary:
    name: str
    members: int


@dataclass(frozen=True)
class Operations:
    """The deployment's running costs and health over the last PERIOD_DAYS (admins only)."""

    days: list[DayCount]
    turns: int
    prompt_tokens: int
    completion_tokens: int
    credits_spent: int
    whatsapp_sent: int
    templates_sent: int  # of whatsapp_sent: approved templates, paid on top outside the 24 h window
    sms_segments: int
    failures: list[tuple[str, int]]  # Twilio error code, count
    jobs: list[tuple[str, int]]  # status, count
    queue_pending: int  # inbound messages waiting for a worker
    outbox_queued: int  # answers waiting to be taken by Twilio
    costs: list[CostLine]  # the cost meter's week and month, for the whole school


@dataclass(frozen=True)
class Overview:
    active_today: int
    active_7: int
    active_30: int
    cohorts: list[CohortSummary]
    operations: Operations | None  # None for a teacher
    flags: OpenFlags  # the open safety flags the viewer may see: every one for an admin


def since(now: datetime, days: int) -> datetime:
    return now - timedelta(days=days)


def students_of(viewer: Viewer) -> Select[Any] | None:
    """The ids a teacher may see, as a subquery; None for an admin (everyone)."""
    if viewer.cohort_ids is None:
        return None
    return select(CohortMember.user_id).where(CohortMember.cohort_id.in_(viewer.cohort_ids or {-1}))


async def _active(db: AsyncSession, viewer: Viewer, now: datetime) -> tuple[int, int, int]:
    """Learners who wrote today (UTC), in 7 and in 30 days: from users.last_inbound_at, one row per user."""
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    counts = []
    for start in (today, since(now, 7), since(now, PERIOD_DAYS)):
        query = select(func.count()).select_from(User).where(User.last_inbound_at >= start)
        scope = students_of(viewer)
        if scope is not None:
            query = query.where(User.id.in_(scope))
        counts.append(int(await db.scalar(query) or 0))
    return counts[0], counts[1], counts[2]


async def cohorts_seen(db: AsyncSession, viewer: Viewer) -> list[CohortSummary]:
    query = (select(Cohort.name, func.count(CohortMember.user_id)).outerjoin(CohortMember)
             .group_by(Cohort.id, Cohort.name).order_by(Cohort.name))
    if viewer.cohort_ids is not None:
        query = query.where(Cohort.id.in_(viewer.cohort_ids or {-1}))
    return [CohortSummary(name, int(n)) for name, n in (await db.execute(query)).all()]


async def _per_day(db: AsyncSession, now: datetime) -> list[DayCount]:
    start = since(now, PERIOD_DAYS - 1).replace(hour=0, minute=0, second=0, microsecond=0)
    counts: dict[str, list[int]] = {}
    inbound_day, outbound_day = func.date(InboundMessage.created_at), func.date(OutboundMessage.created_at)
    both = (select(inbound_day, func.count()).where(InboundMessage.created_at >= start).group_by(inbound_day),
            select(outbound_day, func.count()).where(  # sent: Twilio took it
                OutboundMessage.created_at >= start, OutboundMessage.sid.is_not(None)).group_by(outbound_day))
    for n, query in enumerate(both):
        for value, count in (await db.execute(query)).all():
            counts.setdefault(str(value)[:10], [0, 0])[n] = int(count)
    days = [(start + timedelta(days=i)).date().isoformat() for i in range(PERIOD_DAYS)]
    return [DayCount(d, *counts.get(d, [0, 0])) for d in days]


async def _count(db: AsyncSession, query: Select[Any]) -> int:
    return int(await db.scalar(query) or 0)


async def _operations(db: AsyncSession, settings: Settings, now: datetime) -> Operations:
    start = since(now, PERIOD_DAYS)
    turns, prompt, completion = (await db.execute(select(
        func.count(), func.coalesce(func.sum(TurnRecord.prompt_tokens), 0),
        func.coalesce(func.sum(TurnRecord.completion_tokens), 0))
        .where(TurnRecord.created_at >= start))).one()
    spent = await _count(db, select(-func.coalesce(func.sum(CreditEntry.delta), 0)).where(
        CreditEntry.created_at >= start, CreditEntry.delta < 0))
    sent = OutboundMessage.sid.is_not(None), OutboundMessage.created_at >= start
    whatsapp = await _count(db, select(func.count()).select_from(OutboundMessage).where(
        *sent, OutboundMessage.channel == "whatsapp"))
    templates = await _count(db, select(func.count()).select_from(OutboundMessage).where(
        *sent, OutboundMessage.channel == "whatsapp", OutboundMessage.template.is_(True)))
    segments = await _count(db, select(func.coalesce(func.sum(func.coalesce(OutboundMessage.segments, 1)), 0))
                            .where(*sent, OutboundMessage.channel == "sms"))
    code = func.coalesce(OutboundMessage.error_code, "?")
    failures = (await db.execute(select(code, func.count()).where(
        OutboundMessage.created_at >= start, OutboundMessage.status.in_(FAILED))
        .group_by(code).order_by(func.count().desc()))).all()
    jobs = (await db.execute(select(GenerationJob.status, func.count()).where(
        GenerationJob.created_at >= start).group_by(GenerationJob.status)
        .order_by(GenerationJob.status))).all()
    pending = await _count(db, select(func.count()).select_from(InboundMessage).where(
        InboundMessage.status.in_(("pending", "processing"))))
    queued = await _count(db, select(func.count()).select_from(OutboundMessage).where(
        OutboundMessage.status == "queued"))
    return Operations(
        days=await _per_day(db, now), turns=int(turns), prompt_tokens=int(prompt),
        completion_tokens=int(completion), credits_spent=spent, whatsapp_sent=whatsapp,
        templates_sent=templates, sms_segments=segments,
        failures=[(str(c), int(n)) for c, n in failures], jobs=[(str(s), int(n)) for s, n in jobs],
        queue_pending=pending, outbox_queued=queued, costs=await cost_lines(db, settings, None, now))


async def overview(db: AsyncSession, settings: Settings, viewer: Viewer, now: datetime) -> Overview:
    today, week, month = await _active(db, viewer, now)
    operations = await _operations(db, settings, now) if viewer.is_admin else None
    return Overview(today, week, month, await cohorts_seen(db, viewer), operations,
                    await open_among(db, students_of(viewer)))
