"""A way back after a silence: a student with questions due who has written nothing for
REENGAGE_AFTER_S (2 days) gets one message that brings them back to a REVISION round.

On WhatsApp, past the 24 h window, only an approved template may go: REVIEW_TEMPLATE_SID, a
`twilio/quick-reply` template whose variables are {{1}} the student's first name and {{2}} the
number of questions (a round's, never the backlog), with the button « Réviser » (id `revise:1`,
which handlers/buttons.py turns into REVISION, as the nudge's button). Without it nothing goes
outside the window (`doctor` says so). A student who writes by SMS gets the same as one GSM-7 SMS,
only with SMS_REENGAGE=true (each SMS is paid).

When: at the student's study hour or later that day, 08:00–20:00 local (bot.learning.study_hours),
at most once a day and REENGAGE_MAX_PER_WEEK in 7 days; none once UNANSWERED_MAX were sent since
the student last wrote (they write again: it starts over); never after STOP, REVISION NON, nor on a
gentle day after a child's distress. Each template sent is recorded as one (`outbound_messages.
template`): the dashboard counts it and prices it apart (bot.billing.costs). Planned and sent as
the nudges are (bot.channel.scheduled), and checked again when it goes out.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel.scheduled import Outgoing, deliver_due
from bot.config_groups import Learning
from bot.learning.items import due_count
from bot.learning.nudges import (
    NUDGE_INTERVAL_S,
    daytime,
    distressed,
    has_due,
    plan_daily,
    planned_lately,
    round_count,
)
from bot.periodic import Job
from bot.services import Services
from bot.storage.models import ScheduledSend, User
from bot.texts import fr_en

REENGAGE = "review_reengage"
UNANSWERED_MAX = 3
WEEK = timedelta(days=7)
NAME_MAX = 20  # a first name in a variable or an SMS: one SMS whatever the name
# A row that went, or may have, or is about to: what the weekly cap counts.
_COUNTED = ("pending", "sending", "sent", "unknown")


def _channels(learning: Learning) -> list[ColumnElement[bool]]:
    found: list[ColumnElement[bool]] = []
    if learning.review_template_sid:
        reachable = User.phone.is_not(None) | User.external_id.is_not(None)
        found.append((User.last_channel == "whatsapp") & reachable)
    if learning.sms_reengage:
        found.append((User.last_channel == "sms") & User.phone.is_not(None))
    return found


def _sent(*where: ColumnElement[bool]) -> ColumnElement[int]:
    return select(func.count()).select_from(ScheduledSend).where(
        ScheduledSend.user_id == User.id, ScheduledSend.kind == REENGAGE, *where).scalar_subquery()


def _wanted(now: datetime, learning: Learning,
            channels: list[ColumnElement[bool]]) -> list[ColumnElement[bool]]:
    """Who may be brought back today: the conditions of the module's docstring but the hour, as SQL."""
    unanswered = _sent(ScheduledSend.status.in_(("sent", "unknown")),
                       ScheduledSend.created_at > User.last_inbound_at)
    return [
        User.mode == "child", User.opted_out.is_(False), User.review_nudges.is_(True), or_(*channels),
        User.last_inbound_at <= now - timedelta(seconds=learning.reengage_after_s), has_due(now),
        _sent(ScheduledSend.status.in_(_COUNTED), ScheduledSend.created_at > now - WEEK)
        < learning.reengage_max_per_week,
        unanswered < UNANSWERED_MAX, ~planned_lately(REENGAGE, now), ~distressed(now),
    ]


async def plan_reengagement(services: Services, now: datetime) -> int:
    """Plans today's message for each silent student who may get one now; returns how many."""
    learning = services.settings.learning
    channels = _channels(learning)
    if not channels or not learning.reengage_max_per_week:
        return 0  # no template and no SMS_REENGAGE: nothing goes outside the window
    return await plan_daily(services, now, REENGAGE, "reengage", _wanted(now, learning, channels))


def first_name(user: User) -> str:
    """The name a template or an SMS greets with: the profile's first word, else a plain « toi »."""
    words = (user.display_name or "").split()
    return words[0][:NAME_MAX] if words else fr_en(user.language, "toi", "there")


def template_text(name: str, count: int, language: str) -> str:
    """What the template says (its record), as REVIEW_TEMPLATE_SID is expected to read."""
    many = "s" if count > 1 else ""
    return fr_en(language, f"Bonjour {name} ! {count} question{many} t'attend{'ent' if many else ''} pour "
                           "une révision rapide.",
                 f"Hi {name}! {count} question{many} {'are' if many else 'is'} waiting for a quick review.")


def sms_text(name: str, count: int, language: str) -> str:
    """The same as one GSM-7 SMS (160 characters at most with a name of NAME_MAX)."""
    many = "s" if count > 1 else ""
    return fr_en(language, f"{name}, {count} question{many} t'attend{'ent' if many else ''} sur Deblo. "
                           "Réponds REVISION pour réviser. (REVISION NON : plus de rappels)",
                 f"{name}, {count} question{many} waiting for you on Deblo. Reply REVIEW to practise. "
                 "(REVIEW OFF: no more reminders)")


async def _still_wanted(services: Services, db: AsyncSession, user: User, now: datetime) -> int:
    """The questions due when the row goes out, or 0 when it must not go anymore."""
    learning = services.settings.learning
    silent = user.last_inbound_at is not None and (
        now - user.last_inbound_at >= timedelta(seconds=learning.reengage_after_s))
    if user.opted_out or not user.review_nudges or not silent:
        return 0  # since it was planned: STOP, REVISION NON, or they wrote
    if not daytime(now, user.timezone, services.settings.default_timezone):
        return 0
    if await db.scalar(select(distressed(now).where(User.id == user.id))):
        return 0  # a gentle day
    return await due_count(db, user.id, now)


async def _render(services: Services, db: AsyncSession, row: ScheduledSend, now: datetime) -> Outgoing | None:
    user = await db.get(User, row.user_id)
    if user is None:
        return None
    due = await _still_wanted(services, db, user, now)
    if not due:
        return None
    learning, language = services.settings.learning, user.language or "fr"
    count, name = round_count(due), first_name(user)
    if user.last_channel == "sms":
        if not learning.sms_reengage or not user.phone:
            return None
        return Outgoing(user=user, text=sms_text(name, count, language), channel="sms", kind=REENGAGE)
    if not learning.review_template_sid:
        return None
    return Outgoing(user=user, text=template_text(name, count, language), channel="whatsapp", kind=REENGAGE,
                    template=(learning.review_template_sid, {"1": name, "2": str(count)}))


async def send_reengagement(services: Services, now: datetime | None = None) -> int:
    """The job: plans the messages due now and sends those planned; returns how many Twilio accepted."""
    now = now or services.clock()
    await plan_reengagement(services, now)
    return await deliver_due(services, now, {REENGAGE: _render})


async def _tick(services: Services, now: datetime) -> None:
    await send_reengagement(services, now)


def reengage_jobs(interval_s: float = NUDGE_INTERVAL_S) -> list[Job]:
    """For the composition root: the job that brings silent students back to their review."""
    return [Job(name="review_reengage", interval_s=interval_s, fn=_tick)]
