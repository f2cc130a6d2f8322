"""PROGRES / PROGRESS: the student's own summary (a parent is pointed to ENFANTS). ENFANTS /
CHILDREN: a parent's confirmed children.

Each user only ever sees their own results, and a parent only students linked to them by a link
the parent confirmed (and did not stop).
"""

from __future__ import annotations

from sqlalchemy import select

from bot.capabilities import safety
from bot.capabilities.learner import due_count, skill_views
from bot.capabilities.progress import format_progress, struggles, student_name, subject_stats
from bot.capabilities.quiz import normalise
from bot.channel.context import Incoming
from bot.storage.models import ParentLink, User

PROGRESS_WORDS = frozenset({"progres", "progress", "mes progres", "my progress"})
CHILDREN_WORDS = frozenset({"enfants", "children", "mes enfants", "my children"})


async def handle(msg: Incoming) -> bool:
    word = normalise(msg.text)
    if word in PROGRESS_WORDS or word in CHILDREN_WORDS:
        # What the pipeline wrote is committed first: a send records its row in its own session,
        # and SQLite has one writer at a time.
        await msg.db.commit()
    if word in PROGRESS_WORDS:
        await msg.reply(await own_progress(msg))
        return True
    if word in CHILDREN_WORDS:
        await msg.reply(await children_progress(msg))
        return True
    return False


async def own_progress(msg: Incoming) -> str:
    """Per subject: checked answers, then the skills by status, what was only reported (apart),
    and the items due for review."""
    now, learning = msg.services.clock(), msg.services.settings.learning
    stats = await subject_stats(msg.db, msg.user.id, now)
    skills = await skill_views(msg.db, msg.user.id, learning)
    due = await due_count(msg.db, msg.user.id, now)
    children = msg.t("Les progrès de votre enfant : envoyez ENFANTS.",
                     "Your child's progress: send CHILDREN.")
    if msg.user.role == "parent" and not stats and not skills:
        return children  # a parent asks about their child: their own empty results would puzzle them
    text = format_progress(stats, msg.lang, skills=skills, due=due, compact=msg.channel == "sms")
    if msg.user.role == "parent":
        text += "\n" + children
    elif not stats and not skills:
        text += "\n" + msg.t("Demande-moi un quiz pour commencer !", "Ask me for a quiz to get started!")
    return text


async def children_progress(msg: Incoming) -> str:
    children = (
        await msg.db.scalars(
            select(User)
            .join(ParentLink, ParentLink.student_id == User.id)
            .where(ParentLink.parent_id == msg.user.id, ParentLink.status == "confirmed")
            .order_by(ParentLink.id)
        )
    ).all()
    if not children:
        return msg.t(
            "Aucun enfant n'est lié à votre numéro. Votre enfant peut vous ajouter en envoyant PARENT suivi "
            "de votre numéro.",
            "No child is linked to your number. Your child can add you by sending PARENT and your number.",
        )
    now = msg.services.clock()
    parts = []
    for child in children:
        stats = await subject_stats(msg.db, child.id, now)
        weak = await struggles(msg.db, msg.services.settings.learning, child.id)
        text = format_progress(stats, msg.lang, name=student_name(child, msg.lang), work_on=weak,
                               compact=msg.channel == "sms")
        # Distress flags stay out of a parent's view unless the operator chose (SAFETY_TELL_PARENTS).
        note = await safety.parent_note(msg.db, msg.services.settings, child.id, msg.lang)
        parts.append(f"{text}\n{note}" if note else text)
    return "\n\n".join(parts)
