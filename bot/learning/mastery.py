"""Mastery of a skill by Bayesian Knowledge Tracing (Corbett and Anderson, 1995), as Rori does on
WhatsApp: P(known) is updated on every answer the server checked, never on what the model reported.

One answer: the posterior of "known" given the answer (guess and slip), then the chance of learning
at that step. Parameters come from settings (`Learning`), with guess and slip below 0.3."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.config_groups import Learning
from bot.storage.models import SkillMastery


def bkt_update(p_known: float, correct: bool, learning: Learning) -> float:
    """P(known) after one checked answer."""
    guess, slip = learning.bkt_p_guess, learning.bkt_p_slip
    if correct:
        seen = p_known * (1 - slip) / (p_known * (1 - slip) + (1 - p_known) * guess)
    else:
        seen = p_known * slip / (p_known * slip + (1 - p_known) * (1 - guess))
    return seen + (1 - seen) * learning.bkt_p_learn


def is_mastered(p_known: float, learning: Learning) -> bool:
    return p_known >= learning.bkt_mastered


async def record_checked_answer(
    db: AsyncSession, learning: Learning, *, user_id: int, subject: str, skill: str, label: str,
    correct: bool, now: datetime,
) -> SkillMastery:
    """Updates (or starts) the student's mastery of the skill with one answer the server checked.
    The caller commits; its session holds the user's turn, so one writer per student at a time."""
    row = await db.scalar(select(SkillMastery).where(
        SkillMastery.user_id == user_id, SkillMastery.subject == subject, SkillMastery.skill == skill))
    if row is None:
        row = SkillMastery(user_id=user_id, subject=subject, skill=skill, label=label or skill,
                           p_known=learning.bkt_p_init, answers=0, correct=0)
        db.add(row)
    row.p_known = bkt_update(row.p_known, correct, learning)
    row.answers += 1
    row.correct += int(correct)
    row.updated_at = now
    return row
