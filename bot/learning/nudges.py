"""Practice nudges: « 2 questions à revoir — écris REVISION », sent to a student who has quiz items
due, inside WhatsApp's 24 h window only.

Who gets one: a student (mode child) with items due, who wrote on WhatsApp in the last 24 hours but
has written nothing (on any channel) for `NUDGE_AFTER_S`, who did not send STOP and did not turn
nudges off (REVISION NON: `User.review_nudges`). When: between 08:00 and 20:00 in the student's time
zone, at most once per local day (the ScheduledSend key is the student and that day). Never outside
the window, so never a paid template; never to a child who said distress (a safety flag open, or one
raised in the last day); and never by SMS: an SMS costs money per message and a nudge is
not worth it (a student who only writes by SMS gets none).

Planned and sent as the reminders are (bot.channel.scheduled): whichever worker runs the job
plans the day's row once (its key is unique), and `deliver_due` claims each row before sending. The
row is checked again when it goes out (still due items, still daytime, window still open, nudges
still on); otherwise nothing is sent and the row is "skipped", never retried into the night.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel.scheduled import Outgoing, deliver_due, plan
from bot.clock import zone
from bot.learning.items import due_count
from bot.periodic import Job
from bot.services import Services
from bot.storage.models import QuizItem, SafetyFlag, ScheduledSend, User

NUDGE = "review_nudge"
DAY_STARTS, DAY_ENDS = 8, 20  # local hours: from 08:00, before 20:00
WINDOW = timedelta(hours=24)  # WhatsApp's customer-service window (bot.channel.outbound)
GENTLE_S = 24 * 3600  # as bot.safety.GENTLE_S: no nudge for a day after a child's distress
NUDGE_INTERVAL_S = 300.0
_BATCH = 500


def daytime(now: datetime, timezone: str | None, default: str) -> bool:
    return DAY_STARTS <= now.astimezone(zone(timezone, default)).hour < DAY_ENDS


def nudge_key(user_id: int, now: datetime, timezone: str | None, default: str) -> str:
    """One nudge per student and local day."""
    return f"nudge:{user_id}:{now.astimezone(zone(timezone, default)):%Y-%m-%d}"


def nudge_text(due: int, language: str) -> str:
    plural = "s" if due > 1 else ""
    if language == "en":
        return f"🔁 {due} question{plural} to review — send REVIEW. (REVIEW OFF: no more of these reminders)"
    return f"🔁 {due} question{plural} à revoir — écris REVISION. (REVISION NON : plus de ces rappels)"


def _distressed(now: datetime) -> ColumnElement[bool]:
    return exists().where(SafetyFlag.user_id == User.id, SafetyFlag.acknowledged_at.is_(None)
                          | (SafetyFlag.created_at > now - timedelta(seconds=GENTLE_S)))


def _wanted(now: datetime, quiet_s: int) -> list[ColumnElement[bool]]:
    """Who may get a nudge now: the conditions of the module's docstring, as SQL."""
    quiet = now - timedelta(seconds=quiet_s)
    has_due = exists().where(QuizItem.user_id == User.id, QuizItem.due_at.is_not(None),
                             QuizItem.due_at <= now)
    # Planned less than 12 h ago is planned this local day (the day runs 08:00-20:00): left out here
    # so that a batch is never filled with students already nudged (the key still decides).
    nudged = exists().where(ScheduledSend.user_id == User.id, ScheduledSend.kind == NUDGE,
                            ScheduledSend.created_at > now - timedelta(hours=DAY_ENDS - DAY_STARTS))
    # A child who said distress is not nudged while a flag is open or for a day after one
    # (bot.safety's gentle rule, kept here as SQL).
    distressed = _distressed(now)
    return [
        User.mode == "child", User.opted_out.is_(False), User.review_nudges.is_(True),
        User.last_whatsapp_inbound_at > now - WINDOW, User.last_whatsapp_inbound_at <= quiet,
        User.last_inbound_at.is_(None) | (User.last_inbound_at <= quiet), has_due, ~nudged, ~distressed,
    ]


async def plan_nudges(services: Services, now: datetime) -> int:
    """Plans today's nudge for each student who may get one now; returns how many were planned."""
    settings = services.settings
    planned = 0
    async with services.sessions() as db:
        query = select(User.id, User.timezone).where(*_wanted(now, settings.learning.nudge_after_s))
        rows = (await db.execute(query.order_by(User.id).limit(_BATCH))).all()
        wanted = {nudge_key(uid, now, tz, settings.default_timezone): uid for uid, tz in rows
                  if daytime(now, tz, settings.default_timezone)}
        if not wanted:
            return 0
        known = set(await db.scalars(select(ScheduledSend.key).where(ScheduledSend.key.in_(list(wanted)))))
        for key, user_id in wanted.items():
            if key not in known:
                planned += await plan(db, now, key=key, kind=NUDGE, user_id=user_id, slot_at=now)
        await db.commit()
    return planned


async def _render_nudge(services: Services, db: AsyncSession, row: ScheduledSend,
                        now: datetime) -> Outgoing | None:
    user = await db.get(User, row.user_id)
    if user is None:
        return None
    default = services.settings.default_timezone
    last = user.last_whatsapp_inbound_at
    window_open = last is not None and now - last < WINDOW
    if user.opted_out or not user.review_nudges or not window_open or not daytime(now, user.timezone,
                                                                                 default):
        return None  # since it was planned: STOP, REVISION NON, the window closed or night came
    if await db.scalar(select(_distressed(now).where(User.id == user.id))):
        return None  # the child said distress since: a gentle day
    due = await due_count(db, user.id, now)
    if not due:
        return None  # reviewed meanwhile
    return Outgoing(user=user, text=nudge_text(due, user.language or "fr"), channel="whatsapp", kind=NUDGE)


async def send_review_nudges(services: Services, now: datetime | None = None) -> int:
    """The job: plans the nudges due now and sends those planned; returns how many Twilio accepted."""
    now = now or services.clock()
    await plan_nudges(services, now)
    return await deliver_due(services, now, {NUDGE: _render_nudge})


async def _nudge_tick(services: Services, now: datetime) -> None:
    await send_review_nudges(services, now)


def nudge_jobs(interval_s: float = NUDGE_INTERVAL_S) -> list[Job]:
    """For the composition root: the job that sends students their practice nudges."""
    return [Job(name="review_nudges", interval_s=interval_s, fn=_nudge_tick)]
