"""Practice nudges: « 🔁 5 questions à revoir — écris REVISION » with the buttons « Réviser » and
« Plus tard », sent to a student who has quiz items due, inside WhatsApp's 24 h window only.

Who gets one: a student (mode child) with items due, who wrote on WhatsApp in the last 24 hours but
has written nothing (on any channel) for `NUDGE_AFTER_S`, who did not send STOP and did not turn
nudges off (REVISION NON: `User.review_nudges`). When: at the student's study hour, the local hour
they most often write (bot.learning.study_hours), or later that day, between 08:00 and 20:00 in
their time zone, at most once per local day (the ScheduledSend key is the student and that day): a
student who works in the evening is not nudged in class. A missed item is due at that same hour
the next day (bot.learning.review), while the window its answer opened is still open. Never outside
the window, so never a paid template (that is bot.learning.reengage's); never to a child who said
distress (a safety flag open, or one raised in the last day); and never by SMS: an SMS costs money
per message and a nudge is not worth it (a student who only writes by SMS gets none).

The count is a round's (ROUND_SIZE at most: what « Réviser » starts), never the whole backlog. The
buttons carry the ids `revise:1` and `revise:2` (NUDGE_MENU): handlers/buttons.py starts a REVISION
round for the first and just answers the second; with buttons off or refused, the text says to write
REVISION.

Planned and sent as the reminders are (bot.channel.scheduled): whichever worker runs the job
plans the day's row once (its key is unique), and `deliver_due` claims each row before sending. The
row is checked again when it goes out (still due items, still daytime, window still open, nudges
still on); otherwise nothing is sent and the row is "skipped", never retried into the night.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel.buttons import Menu
from bot.channel.scheduled import Outgoing, deliver_due, plan
from bot.clock import zone
from bot.learning.items import due_count
from bot.learning.rounds import ROUND_SIZE
from bot.learning.study_hours import DAY_ENDS, DAY_STARTS, at_study_hour, refresh_study_hours
from bot.periodic import Job
from bot.services import Services
from bot.storage.models import QuizItem, SafetyFlag, ScheduledSend, User, gentle_flag
from bot.texts import fr_en

NUDGE = "review_nudge"
NUDGE_MENU = "revise"  # the buttons' ids: revise:1 « Réviser », revise:2 « Plus tard »
WINDOW = timedelta(hours=24)  # WhatsApp's customer-service window (bot.channel.outbound)
NUDGE_INTERVAL_S = 300.0
_BATCH = 500


def daytime(now: datetime, timezone: str | None, default: str) -> bool:
    return DAY_STARTS <= now.astimezone(zone(timezone, default)).hour < DAY_ENDS


def daily_key(prefix: str, user_id: int, now: datetime, timezone: str | None, default: str) -> str:
    """One message of a kind per student and local day."""
    return f"{prefix}:{user_id}:{now.astimezone(zone(timezone, default)):%Y-%m-%d}"


def round_count(due: int) -> int:
    """The questions a round asks of `due` ones: what a reminder promises, never the backlog."""
    return min(due, ROUND_SIZE)


def nudge_text(due: int, language: str) -> str:
    count = round_count(due)
    plural = "s" if count > 1 else ""
    if language == "en":
        return (f"🔁 {count} question{plural} to review — send REVIEW. "
                "(REVIEW OFF: no more of these reminders)")
    return f"🔁 {count} question{plural} à revoir — écris REVISION. (REVISION NON : plus de ces rappels)"


def review_menu(body: str, language: str) -> Menu:
    """`body` under the reminders' two buttons, « Réviser » and « Plus tard » (NUDGE_MENU): a nudge,
    or a round's score that offers the next round (handlers/review.py)."""
    return Menu(menu_id=NUDGE_MENU, body=body, language=language,
                options=(fr_en(language, "Réviser", "Review"), fr_en(language, "Plus tard", "Later")))


def nudge_menu(due: int, language: str) -> Menu:
    return review_menu(nudge_text(due, language), language)


def distressed(now: datetime) -> ColumnElement[bool]:
    """A child who said distress: a flag open, or raised within the last day (bot.safety's gentle
    rule, `gentle_flag`, as a condition on the user)."""
    return exists().where(SafetyFlag.user_id == User.id, gentle_flag(now))


def has_due(now: datetime) -> ColumnElement[bool]:
    return exists().where(QuizItem.user_id == User.id, QuizItem.due_at.is_not(None), QuizItem.due_at <= now)


def planned_lately(kind: str, now: datetime) -> ColumnElement[bool]:
    """Planned less than 12 h ago is planned this local day (the day runs 08:00-20:00): left out of
    the planners' selects so that a batch is never filled with students already planned (the key
    still decides)."""
    return exists().where(ScheduledSend.user_id == User.id, ScheduledSend.kind == kind,
                          ScheduledSend.created_at > now - timedelta(hours=DAY_ENDS - DAY_STARTS))


def _wanted(now: datetime, quiet_s: int) -> list[ColumnElement[bool]]:
    """Who may get a nudge today: the conditions of the module's docstring but the hour, as SQL."""
    quiet = now - timedelta(seconds=quiet_s)
    return [
        User.mode == "child", User.opted_out.is_(False), User.review_nudges.is_(True),
        User.last_whatsapp_inbound_at > now - WINDOW, User.last_whatsapp_inbound_at <= quiet,
        User.last_inbound_at.is_(None) | (User.last_inbound_at <= quiet), has_due(now),
        ~planned_lately(NUDGE, now), ~distressed(now),
    ]


async def plan_daily(services: Services, now: datetime, kind: str, prefix: str,
                     wanted: list[ColumnElement[bool]]) -> int:
    """Plans today's `kind` row (`daily_key`) for each user `wanted` selects whose study hour has
    come; returns how many were planned."""
    default = services.settings.default_timezone
    await refresh_study_hours(services, now)
    planned = 0
    async with services.sessions() as db:
        hour_come = await at_study_hour(db, now, wanted, default)
        if hour_come is None:
            return 0
        query = select(User.id, User.timezone).where(*wanted, hour_come)
        rows = (await db.execute(query.order_by(User.id).limit(_BATCH))).all()
        keys = {daily_key(prefix, uid, now, tz, default): uid for uid, tz in rows}
        if not keys:
            return 0
        known = set(await db.scalars(select(ScheduledSend.key).where(ScheduledSend.key.in_(list(keys)))))
        for key, user_id in keys.items():
            if key not in known:
                planned += await plan(db, now, key=key, kind=kind, user_id=user_id, slot_at=now)
        await db.commit()
    return planned


async def plan_nudges(services: Services, now: datetime) -> int:
    """Plans today's nudge for each student who may get one now; returns how many were planned."""
    wanted = _wanted(now, services.settings.learning.nudge_after_s)
    return await plan_daily(services, now, NUDGE, "nudge", wanted)


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
    if await db.scalar(select(distressed(now).where(User.id == user.id))):
        return None  # the child said distress since: a gentle day
    due = await due_count(db, user.id, now)
    if not due:
        return None  # reviewed meanwhile
    language = user.language or "fr"
    return Outgoing(user=user, text=nudge_text(due, language), channel="whatsapp", kind=NUDGE,
                    menu=nudge_menu(due, language))


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
