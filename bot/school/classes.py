"""What a class looks like to its teacher: the roster with level and last activity, who is at risk,
and the skills the class should work on. Plain functions over an AsyncSession, each for one class
the caller may see (the console: any; a teacher: their own), used by the weekly teacher summary and
open to the dashboard.

Activity is a message from the student (`User.last_inbound_at`). At risk: no message for
`QUIET_DAYS` days (or never), or a skill whose mastery fell by `FELL_BY` or more over those days.
Mastery (bot.learning, BKT) keeps only its current value; where it stood a week ago is
found by undoing, newest first, the week's checked answers (`ExerciseResult` rows with `verified`,
the very answers that moved it): each BKT step is a strictly increasing function of P(known), so it
has one inverse. That reads the week's answers only, not a year of them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import case, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.config_groups import Learning
from bot.learning import canonical_subject, subject_name
from bot.storage.models import Cohort, CohortMember, ExerciseResult, SkillMastery, User

__all__ = ["FELL_BY", "QUIET_DAYS", "AtRisk", "ClassSkill", "FallenSkill", "Student", "at_risk",
           "bkt_before", "find_cohort", "is_active", "mastery_falls", "roster", "skills_to_work_on"]

QUIET_DAYS = 7
FELL_BY = 0.10  # a fall smaller than this is one unlucky answer, not a trend
REVIEW_BELOW = 0.5  # as bot.learning's « à revoir »


@dataclass(frozen=True)
class Student:
    user_id: int
    phone: str | None
    name: str | None
    level: str | None
    last_activity: datetime | None  # their last message
    joined_at: datetime

    def shown(self) -> str:
        """The name, else the number with its middle hidden (an e-mail can travel)."""
        if self.name:
            return self.name
        phone = self.phone or ""
        return f"{phone[:4]}…{phone[-4:]}" if len(phone) > 8 else (phone or f"#{self.user_id}")


@dataclass(frozen=True)
class FallenSkill:
    subject: str  # canonical
    label: str
    before: float  # P(known) QUIET_DAYS ago
    now: float


@dataclass(frozen=True)
class AtRisk:
    student: Student
    quiet_days: int | None  # days since the last message (None: active); -1: never wrote
    fallen: tuple[FallenSkill, ...]


@dataclass(frozen=True)
class ClassSkill:
    subject: str  # canonical
    skill: str
    label: str
    students: int  # with at least one checked answer on it
    mean: float  # their mean P(known)
    struggling: int  # of them below REVIEW_BELOW

    def shown(self, language: str) -> str:
        return self.label or subject_name(self.subject, language)


async def find_cohort(db: AsyncSession, name: str) -> Cohort | None:
    return await db.scalar(select(Cohort).where(Cohort.name == name))


async def roster(db: AsyncSession, cohort_id: int) -> list[Student]:
    """The class's students, by name (unnamed last, by number)."""
    rows = (await db.execute(
        select(User.id, User.phone, User.display_name, User.school_level, User.last_inbound_at,
               CohortMember.joined_at)
        .join(CohortMember, CohortMember.user_id == User.id)
        .where(CohortMember.cohort_id == cohort_id)
    )).all()
    students = [Student(*row) for row in rows]
    return sorted(students, key=lambda s: (s.name is None, (s.name or "").casefold(), s.phone or ""))


def is_active(student: Student, now: datetime, days: int = QUIET_DAYS) -> bool:
    return student.last_activity is not None and student.last_activity >= now - timedelta(days=days)


def bkt_before(p_after: float, correct: bool, learning: Learning) -> float:
    """P(known) before one checked answer, from P(known) after it (the inverse of
    bot.learning.bkt_update)."""
    learn, guess, slip = learning.bkt_p_learn, learning.bkt_p_guess, learning.bkt_p_slip
    seen = min(1.0, max(0.0, (p_after - learn) / (1 - learn)))
    # seen = p·a / (p·a + (1 − p)·b), solved for p.
    a, b = (1 - slip, guess) if correct else (slip, 1 - guess)
    below = a * (1 - seen) + seen * b
    return min(1.0, max(0.0, seen * b / below)) if below > 0 else seen


async def mastery_falls(db: AsyncSession, user_ids: list[int], since: datetime,
                        learning: Learning) -> dict[int, list[FallenSkill]]:
    """Per student, the skills whose P(known) fell by FELL_BY or more since `since`, worst first."""
    if not user_ids:
        return {}
    answers: dict[tuple[int, str, str], list[bool]] = defaultdict(list)
    for user_id, subject, skill, correct in (await db.execute(
        select(ExerciseResult.user_id, ExerciseResult.subject, ExerciseResult.skill, ExerciseResult.correct)
        .where(ExerciseResult.user_id.in_(user_ids), ExerciseResult.verified.is_(True),
               ExerciseResult.created_at >= since)
        .order_by(ExerciseResult.created_at, ExerciseResult.id)
    )).all():
        answers[(user_id, subject, skill)].append(bool(correct))
    falls: dict[int, list[FallenSkill]] = defaultdict(list)
    for row in (await db.scalars(select(SkillMastery).where(SkillMastery.user_id.in_(user_ids)))).all():
        week = answers.get((row.user_id, row.subject, row.skill))
        if not week:
            continue
        before = row.p_known
        for correct in reversed(week):
            before = bkt_before(before, correct, learning)
        if before - row.p_known >= FELL_BY:
            falls[row.user_id].append(FallenSkill(canonical_subject(row.subject), row.label, before,
                                                  row.p_known))
    return {uid: sorted(found, key=lambda f: f.now - f.before) for uid, found in falls.items()}


async def at_risk(db: AsyncSession, cohort_id: int, now: datetime, learning: Learning) -> list[AtRisk]:
    """The students of the class with no message for QUIET_DAYS days (or none ever), or a skill
    whose mastery fell; the longest quiet first, then the largest fall."""
    students = await roster(db, cohort_id)
    since = now - timedelta(days=QUIET_DAYS)
    falls = await mastery_falls(db, [s.user_id for s in students], since, learning)
    found: list[AtRisk] = []
    for student in students:
        quiet = None
        if student.last_activity is None:
            quiet = -1
        elif not is_active(student, now):
            quiet = (now - student.last_activity).days
        fallen = tuple(falls.get(student.user_id, ()))
        if quiet is not None or fallen:
            found.append(AtRisk(student, quiet, fallen))

    def order(risk: AtRisk) -> tuple[int, float]:
        quiet = 10**6 if risk.quiet_days == -1 else (risk.quiet_days or 0)
        return (-quiet, min((f.now - f.before for f in risk.fallen), default=0.0))

    return sorted(found, key=order)


async def skills_to_work_on(db: AsyncSession, cohort_id: int, learning: Learning,
                            limit: int = 5) -> list[ClassSkill]:
    """The skills the class has not mastered, by the mean P(known) of the students who answered on
    them, lowest first (more students first at a tie). Subjects written before they were canonical
    are merged into their canonical one."""
    rows = (await db.execute(
        select(SkillMastery.subject, SkillMastery.skill, func.min(SkillMastery.label),
               func.count(), func.sum(SkillMastery.p_known),
               func.sum(case((SkillMastery.p_known < REVIEW_BELOW, 1), else_=0)))
        .join(CohortMember, CohortMember.user_id == SkillMastery.user_id)
        .where(CohortMember.cohort_id == cohort_id, SkillMastery.answers > 0)
        .group_by(SkillMastery.subject, SkillMastery.skill)
    )).all()
    merged: dict[tuple[str, str], list[float]] = {}
    labels: dict[tuple[str, str], str] = {}
    for subject, skill, label, count, total, struggling in rows:
        key = (canonical_subject(subject), skill)
        sums = merged.setdefault(key, [0, 0.0, 0])
        sums[0] += count
        sums[1] += float(total or 0)
        sums[2] += int(struggling or 0)
        labels.setdefault(key, " ".join((label or "").split()))
    skills = [ClassSkill(subject, skill, labels[(subject, skill)], int(n), total / n, int(weak))
              for (subject, skill), (n, total, weak) in merged.items() if n]
    wanted = [s for s in skills if s.mean < learning.bkt_mastered]
    return sorted(wanted, key=lambda s: (s.mean, -s.students, s.label))[:limit]
