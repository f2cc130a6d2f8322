"""PROGRES / PROGRESS: the student's own summary (a parent is pointed to ENFANTS). ENFANTS /
CHILDREN: a parent's confirmed children.

On WhatsApp the text goes with its chart (bot.learning.progress_chart: one PNG per student,
kept as a generated file of the person it is sent to, as every file that goes out is, and sent as
its signed link); a parent gets one message and one chart per child, at most MAX_CHILD_CHARTS
charts. By SMS, which carries no image, each student's text ends with the signed link to their
progress page (bot.web.progress_page). A chart that cannot be drawn leaves the text alone.

Each user only ever sees their own results, and a parent only students linked to them by a link
the parent confirmed (and did not stop).
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import select

from bot import safety
from bot.channel.context import Incoming
from bot.channel.links import progress_page_url, short_name
from bot.learning import answer_streak, due_count, homework_line, skill_views
from bot.learning.progress import format_progress, struggles, student_name, subject_stats
from bot.learning.progress_chart import progress_data, progress_png
from bot.learning.quiz_types import normalise
from bot.library import add_file
from bot.storage.models import ParentLink, User, UserFile

log = logging.getLogger("deblo.progress")

PROGRESS_WORDS = frozenset({"progres", "progress", "mes progres", "my progress"})
CHILDREN_WORDS = frozenset({"enfants", "children", "mes enfants", "my children"})
MAX_CHILD_CHARTS = 4  # a parent of more children gets the others' text alone (and the page by SMS)


async def handle(msg: Incoming) -> bool:
    word = normalise(msg.text)
    if word in PROGRESS_WORDS or word in CHILDREN_WORDS:
        # What the pipeline wrote is committed first: a send records its row in its own session,
        # and SQLite has one writer at a time.
        await msg.db.commit()
    if word in PROGRESS_WORDS:
        text, own = await own_progress(msg)
        await _send(msg, msg.user, text, msg.t("Progrès", "Your progress") if own else None)
        return True
    if word in CHILDREN_WORDS:
        await children_progress(msg)
        return True
    return False


async def own_progress(msg: Incoming) -> tuple[str, bool]:
    """The streak (days in a row, in the user's zone, with a checked answer), then per subject:
    checked answers, then the skills by status, what was only reported (apart),
    and the items due for review; and whether it is about the user's own results (not a parent
    only pointed to ENFANTS)."""
    now, learning = msg.services.clock(), msg.services.settings.learning
    stats = await subject_stats(msg.db, msg.user.id, now)
    skills = await skill_views(msg.db, msg.user.id, learning)
    due = await due_count(msg.db, msg.user.id, now)
    children = parent_pointer(msg)
    if msg.user.role == "parent" and not stats and not skills:
        return children, False  # a parent asks about their child: their own empty results would puzzle them
    streak = await answer_streak(msg.db, msg.user.id, now, msg.user.timezone,
                                 msg.services.settings.default_timezone)
    text = format_progress(stats, msg.lang, skills=skills, due=due, compact=msg.channel == "sms",
                           streak=streak)
    if msg.user.role == "parent":
        text += "\n" + children
    elif not stats and not skills:
        text += "\n" + msg.t("Pour commencer, il suffit de demander un quiz !",
                             "Ask me for a quiz to get started!")
    return text, True


def parent_pointer(msg: Incoming) -> str:
    """PROGRES from a parent: where their child's progress is."""
    return msg.t("Les progrès de votre enfant : envoyez ENFANTS.", "Your child's progress: send CHILDREN.")


async def children_progress(msg: Incoming) -> None:
    children = (
        await msg.db.scalars(
            select(User)
            .join(ParentLink, ParentLink.student_id == User.id)
            .where(ParentLink.parent_id == msg.user.id, ParentLink.status == "confirmed")
            .order_by(ParentLink.id)
        )
    ).all()
    if not children:
        await msg.reply(msg.t(
            "Aucun enfant n'est lié à votre numéro. Votre enfant peut vous ajouter en envoyant PARENT suivi "
            "de votre numéro.",
            "No child is linked to your number. Your child can add you by sending PARENT and your number.",
        ))
        return
    now, sms = msg.services.clock(), msg.channel == "sms"
    parts = []
    for child in children:
        stats = await subject_stats(msg.db, child.id, now)
        weak = await struggles(msg.db, msg.services.settings.learning, child.id)
        name = student_name(child, msg.lang)
        text = format_progress(stats, msg.lang, name=name, work_on=weak, compact=sms)
        homework = await homework_line(msg.db, child.id, now, msg.lang)  # the teachers' assignments
        text = f"{text}\n{homework}" if homework else text
        # Distress flags stay out of a parent's view unless the operator chose (SAFETY_TELL_PARENTS).
        note = await safety.parent_note(msg.db, msg.services.settings, child.id, msg.lang)
        parts.append((child, f"{text}\n{note}" if note else text, name))
    if sms:  # one message, each child's part ending with their page's link
        await msg.reply("\n\n".join(_with_link(msg, child, text) for child, text, _ in parts))
        return
    for n, (child, text, name) in enumerate(parts):
        title = msg.t(f"Progrès de {name}", f"{name}'s progress") if n < MAX_CHILD_CHARTS else None
        await _send(msg, child, text, title)


def _with_link(msg: Incoming, student: User, text: str) -> str:
    """The SMS text ending with the student's page link (the page is read live: it stays current)."""
    url = progress_page_url(msg.services.settings, student.id, now=msg.services.clock().timestamp())
    return f"{text}\n{msg.t('Tout voir : ', 'See it all: ')}{url}"


async def _send(msg: Incoming, student: User, text: str, chart_title: str | None) -> None:
    """The text, with its chart on WhatsApp (when `chart_title`), or its page's link by SMS."""
    if msg.channel == "sms":
        await msg.reply(_with_link(msg, student, text) if chart_title else text)
        return
    chart = None
    if chart_title and msg.channel == "whatsapp":
        chart = await _chart_file(msg, student, text, chart_title)
    await msg.reply(text, media=chart)


async def _chart_file(msg: Incoming, student: User, text: str, title: str) -> UserFile | None:
    """The student's chart drawn (in a thread) and kept as a generated file of the one it goes to,
    committed before the send: Twilio fetches its link at once. None when there is nothing to draw
    or it could not be drawn."""
    services = msg.services
    now = services.clock()
    try:
        data = await progress_data(msg.db, student.id, services.settings.learning, now, student.timezone)
        if not data.skills and not any(w.total for w in data.weeks):
            return None
        png = await asyncio.to_thread(progress_png, data, msg.lang, title)
        stem = short_name(f"{title} {data.as_of:%Y-%m-%d}.png")
        async with services.sessions() as db:
            row = await add_file(services, db, user_id=msg.user.id, name=stem, mime="image/png", data=png,
                                 origin="generated", text_content=text)
            await db.commit()
        return row
    except Exception:  # the text still goes: a chart is a help, not the answer
        log.exception("progress chart not made", extra={"user_id": msg.user.id, "student_id": student.id})
        return None
