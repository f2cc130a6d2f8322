"""The learner sees their own progress: the streak (days in a row, in the student's time zone, with an
answer the server checked) that PROGRES shows, and a weekly note on WhatsApp: « 📅 Cette semaine :
12 questions, 9 justes, 4 jours de suite ; à revoir : les fractions ».

Who gets the note: a student (mode child) with a checked answer in the last 7 days, enrolled for a
week at least, who wrote on WhatsApp in the last 24 hours (inside the window: never a paid
template, never by SMS) but not in the last half hour (a session is not interrupted), who did not
send STOP and did not turn the note off (BILAN NON: `User.weekly_progress_notes`), and who is not on
a gentle day (a safety flag open, or one raised in the last day: bot.safety's rule, kept here as
SQL as the nudges keep it). When: from the student's study hour to the end of their day (local), at most
once per ISO week of their zone (the ScheduledSend key) and 6 days at least after the last one.

Planned and sent as the nudges are (bot.channel.scheduled); the row is checked again when it goes
out, and nothing is sent (the row "skipped") when a condition no longer holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import ColumnElement, exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel.scheduled import Outgoing, deliver_due, plan_each
from bot.clock import zone
from bot.config_groups import Learning
from bot.learning.nudges import WINDOW, distressed
from bot.learning.profile import skill_views, to_work_on
from bot.learning.study_hours import DAY_ENDS, send_hour
from bot.periodic import Job
from bot.services import Services
from bot.storage.models import ExerciseResult, ScheduledSend, User
from bot.texts import fr_en

NOTE = "weekly_note"
# The evening, when students do their homework. The note goes in these local hours until it follows
# each student's own study hour (learned from when they write).
NOTE_UNTIL = DAY_ENDS  # local: from the student's study hour to the end of their day
QUIET = timedelta(minutes=30)  # not in the middle of a session
SPACING = timedelta(days=6)  # one ISO week to the next, never two days running
FIRST_AFTER = timedelta(days=6)  # a new student's first note after their first week
WEEK_DAYS = 7
STREAK_DAYS = 400  # how far back a streak is counted
MAX_REVIEW = 2  # skills named under « à revoir »
NOTE_INTERVAL_S = 300.0
_BATCH = 500


@dataclass(frozen=True)
class Week:
    """The last 7 local days (today included) of one student's checked answers."""

    questions: int
    right: int
    days: int  # days with a checked answer among them
    streak: int
    review: tuple[str, ...]  # the skills « à revoir », weakest first, as the student first saw them


def streak_of(days: set[date], today: date) -> int:
    """Days in a row with a checked answer, up to today; a streak still stands on a day not yet
    practised, and a day without breaks it."""
    day = today if today in days else today - timedelta(days=1)
    count = 0
    while day in days:
        count += 1
        day -= timedelta(days=1)
    return count


async def _answer_days(db: AsyncSession, user_id: int, since: datetime,
                       timezone: ZoneInfo) -> list[tuple[date, bool]]:
    rows = await db.execute(select(ExerciseResult.created_at, ExerciseResult.correct).where(
        ExerciseResult.user_id == user_id, ExerciseResult.verified.is_(True),
        ExerciseResult.created_at >= since))
    return [(at.astimezone(timezone).date(), bool(correct)) for at, correct in rows]


async def answer_streak(db: AsyncSession, user_id: int, now: datetime, timezone: str | None,
                        default: str) -> int:
    """The student's streak now, counted in their time zone."""
    local = zone(timezone, default)
    answers = await _answer_days(db, user_id, now - timedelta(days=STREAK_DAYS), local)
    return streak_of({day for day, _ in answers}, now.astimezone(local).date())


async def week_of(db: AsyncSession, learning: Learning, user: User, now: datetime, default: str) -> Week:
    local = zone(user.timezone, default)
    today = now.astimezone(local).date()
    answers = await _answer_days(db, user.id, now - timedelta(days=STREAK_DAYS), local)
    first = today - timedelta(days=WEEK_DAYS - 1)
    week = [correct for day, correct in answers if first <= day <= today]
    weak = to_work_on(await skill_views(db, user.id, learning), MAX_REVIEW, struggling=True)
    return Week(questions=len(week), right=sum(week),
                days=len({day for day, _ in answers if first <= day <= today}),
                streak=streak_of({day for day, _ in answers}, today),
                review=tuple(s.shown(user.language or "fr") for s in weak))


def streak_line(streak: int, language: str) -> str:
    """PROGRES's line: « 🔥 4 jours de suite »."""
    many = "s" if streak > 1 else ""
    return fr_en(language, f"🔥 {streak} jour{many} de suite", f"🔥 {streak} day{many} in a row")


def note_text(week: Week, language: str, *, footer: bool = True) -> str:
    """« 📅 Cette semaine : 12 questions, 9 justes, 4 jours de suite ; à revoir : les fractions. »"""
    q, r = ("s" if week.questions > 1 else ""), ("s" if week.right > 1 else "")
    if week.streak >= 2:
        days = fr_en(language, f"{week.streak} jours de suite", f"{week.streak} days in a row")
    else:
        d = "s" if week.days > 1 else ""
        days = fr_en(language, f"{week.days} jour{d} de travail", f"{week.days} day{d} of practice")
    fr = f"📅 Cette semaine : {week.questions} question{q}, {week.right} juste{r}, {days}"
    en = f"📅 This week: {week.questions} question{q}, {week.right} right, {days}"
    if week.review:
        fr += " ; à revoir : " + ", ".join(week.review)
        en += "; to review: " + ", ".join(week.review)
    text = fr_en(language, f"{fr}.", f"{en}.")
    if footer:
        text += fr_en(language, " (BILAN NON : plus de bilan)", " (SUMMARY OFF: no more of these)")
    return text


def note_time(now: datetime, timezone: str | None, default: str, hour: int | None = None) -> bool:
    """From the student's study hour (bot.learning.study_hours; 18:00 until it is learned) to the
    end of their day, local."""
    return send_hour(hour) <= now.astimezone(zone(timezone, default)).hour < NOTE_UNTIL


def note_key(user_id: int, now: datetime, timezone: str | None, default: str) -> str:
    """One note per student and ISO week of their zone."""
    return f"weekly:{user_id}:{now.astimezone(zone(timezone, default)):%G-W%V}"


def _wanted(now: datetime) -> list[ColumnElement[bool]]:
    """Who may get a note now: the conditions of the module's docstring, as SQL."""
    quiet = now - QUIET
    worked = exists().where(ExerciseResult.user_id == User.id, ExerciseResult.verified.is_(True),
                            ExerciseResult.created_at > now - timedelta(days=WEEK_DAYS))
    noted = exists().where(ScheduledSend.user_id == User.id, ScheduledSend.kind == NOTE,
                           ScheduledSend.created_at > now - SPACING)
    return [
        User.mode == "child", User.opted_out.is_(False), User.weekly_progress_notes.is_(True),
        User.created_at <= now - FIRST_AFTER, User.last_whatsapp_inbound_at > now - WINDOW,
        User.last_whatsapp_inbound_at <= quiet,
        User.last_inbound_at.is_(None) | (User.last_inbound_at <= quiet),
        worked, ~noted, ~distressed(now),
    ]


async def plan_notes(services: Services, now: datetime) -> int:
    """Plans this week's note for each student who may get one now; returns how many were planned."""
    default = services.settings.default_timezone
    async with services.sessions() as db:
        rows = (await db.execute(select(User.id, User.timezone, User.study_hour).where(*_wanted(now))
                                 .order_by(User.id).limit(_BATCH))).all()
        wanted = {note_key(uid, now, tz, default): uid for uid, tz, hour in rows
                  if note_time(now, tz, default, hour)}
        planned = await plan_each(db, now, NOTE, wanted)
        await db.commit()
    return planned


async def _still_wanted(db: AsyncSession, user: User | None, now: datetime, default: str) -> bool:
    """A planned note still goes: not since STOP nor BILAN NON, the window still open, the evening
    not passed, and no gentle day begun."""
    if user is None or user.opted_out or not user.weekly_progress_notes:
        return False
    last = user.last_whatsapp_inbound_at
    if last is None or now - last >= WINDOW or not note_time(now, user.timezone, default, user.study_hour):
        return False
    return not await db.scalar(select(distressed(now).where(User.id == user.id)))


async def _render_note(services: Services, db: AsyncSession, row: ScheduledSend,
                       now: datetime) -> Outgoing | None:
    user = await db.get(User, row.user_id)
    default = services.settings.default_timezone
    if user is None or not await _still_wanted(db, user, now, default):
        return None
    week = await week_of(db, services.settings.learning, user, now, default)
    if not week.questions:
        return None
    return Outgoing(user=user, text=note_text(week, user.language or "fr"), channel="whatsapp", kind=NOTE)


async def send_weekly_notes(services: Services, now: datetime | None = None) -> int:
    """The job's tick: plans the notes due now and sends those planned; returns how many Twilio
    accepted."""
    when = now or services.clock()
    await plan_notes(services, when)
    return await deliver_due(services, when, {NOTE: _render_note})


def weekly_note_jobs(interval_s: float = NOTE_INTERVAL_S) -> list[Job]:
    """For the composition root: the job that sends students their weekly note."""

    async def tick(services: Services, now: datetime) -> None:
        await send_weekly_notes(services, now)

    return [Job(name="weekly_notes", interval_s=interval_s, fn=tick)]
