"""A class and a student as the dashboard reads them: the roster, the heatmap of mastery (with how
many of each student's questions on a skill were taught again, bot.learning.reteach), who is at
risk, one student's skills, results and items due, and the rows of the CSV exports. A class or a
student outside the viewer's scope is None (the page answers 404, as for one that does not exist)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.billing.costs import CostLine, cost_lines
from bot.config import Settings
from bot.config_groups import Learning
from bot.learning import SkillView, canonical_subject, due_count, due_items, skill_views, subject_name
from bot.storage.models import Cohort, CohortMember, ExerciseResult, QuizItem, SkillMastery, User
from bot.web.admin.auth import Viewer

QUIET_DAYS = 7  # no message for this long: at risk
MAX_COLUMNS = 24  # skills in the heatmap, the most practised first
RESULT_WEEKS = 12


@dataclass(frozen=True)
class Student:
    user_id: int
    name: str
    phone: str
    level: str
    last_active: datetime | None
    joined_at: datetime | None = None


@dataclass(frozen=True)
class Cell:
    p_known: float | None  # None when never answered
    retaught: int  # the student's questions on that skill asked to teach a missed one again


@dataclass(frozen=True)
class Heatmap:
    skills: list[tuple[str, str]]  # (column label, subject shown) in column order
    rows: list[tuple[Student, list[Cell]]]  # one cell per column


@dataclass(frozen=True)
class AtRisk:
    student: Student
    quiet: bool  # no message for QUIET_DAYS
    fell: list[str]  # the skills whose last checked answer this week was wrong (their mastery fell)


@dataclass(frozen=True)
class ClassView:
    name: str
    roster: list[Student]
    heatmap: Heatmap
    at_risk: list[AtRisk]


def _student(user: User, joined_at: datetime | None = None) -> Student:
    return Student(user.id, user.display_name or "", user.phone or "", user.school_level or "",
                   user.last_inbound_at, joined_at)


async def cohort_for(db: AsyncSession, viewer: Viewer, name: str) -> Cohort | None:
    cohort = await db.scalar(select(Cohort).where(Cohort.name == name))
    if cohort is None or (viewer.cohort_ids is not None and cohort.id not in viewer.cohort_ids):
        return None
    return cohort


async def roster(db: AsyncSession, cohort_id: int) -> list[Student]:
    rows = (await db.execute(select(User, CohortMember.joined_at).join(
        CohortMember, CohortMember.user_id == User.id).where(CohortMember.cohort_id == cohort_id)
        .order_by(User.display_name, User.id))).all()
    return [_student(user, joined) for user, joined in rows]


async def _heatmap(db: AsyncSession, cohort_id: int, students: list[Student]) -> Heatmap:
    rows = (await db.execute(select(SkillMastery.user_id, SkillMastery.subject, SkillMastery.skill,
                                    SkillMastery.label, SkillMastery.p_known).join(
        CohortMember, CohortMember.user_id == SkillMastery.user_id).where(
        CohortMember.cohort_id == cohort_id, SkillMastery.answers > 0)
        .order_by(SkillMastery.updated_at))).all()
    values: dict[tuple[int, str, str], float] = {}
    labels: dict[tuple[str, str], str] = {}
    for user_id, subject, skill, label, p_known in rows:
        key = (canonical_subject(subject), skill)
        values[(user_id, *key)] = float(p_known)  # the latest estimate stands, as in skill_views
        labels.setdefault(key, " ".join((label or "").split()) or subject_name(key[0], "fr"))
    practised: dict[tuple[str, str], int] = {}
    for _user, subject, skill in values:
        practised[(subject, skill)] = practised.get((subject, skill), 0) + 1
    columns = sorted(practised, key=lambda k: -practised[k])[:MAX_COLUMNS]
    columns.sort(key=lambda k: (k[0], labels[k].casefold()))
    retaught = await _retaught(db, cohort_id)
    return Heatmap(skills=[(labels[k], subject_name(k[0], "fr")) for k in columns],
                   rows=[(s, [Cell(values.get((s.user_id, *k)), retaught.get((s.user_id, *k), 0))
                              for k in columns]) for s in students])


async def _retaught(db: AsyncSession, cohort_id: int) -> dict[tuple[int, str, str], int]:
    """Per (student, subject, skill): the questions asked to teach a missed one again (each is kept
    on the missed one's subject and skill)."""
    rows = (await db.execute(select(QuizItem.user_id, QuizItem.subject, QuizItem.skill, func.count()).join(
        CohortMember, CohortMember.user_id == QuizItem.user_id).where(
        CohortMember.cohort_id == cohort_id, QuizItem.replaces_item_id.is_not(None))
        .group_by(QuizItem.user_id, QuizItem.subject, QuizItem.skill))).all()
    counts: dict[tuple[int, str, str], int] = {}
    for user_id, subject, skill, count in rows:
        key = (user_id, canonical_subject(subject), skill)
        counts[key] = counts.get(key, 0) + int(count)
    return counts


async def _fell(db: AsyncSession, cohort_id: int, now: datetime) -> dict[int, list[str]]:
    """Per student, the skills whose last checked answer of the last QUIET_DAYS was wrong: a wrong
    answer always lowers BKT's P(known), so that skill's mastery fell."""
    rows = (await db.execute(select(ExerciseResult.user_id, ExerciseResult.subject, ExerciseResult.skill,
                                    ExerciseResult.topic, ExerciseResult.correct).join(
        CohortMember, CohortMember.user_id == ExerciseResult.user_id).where(
        CohortMember.cohort_id == cohort_id, ExerciseResult.verified.is_(True),
        ExerciseResult.created_at >= now - timedelta(days=QUIET_DAYS))
        .order_by(ExerciseResult.created_at, ExerciseResult.id))).all()
    last: dict[tuple[int, str, str], tuple[str, bool]] = {}
    for user_id, subject, skill, topic, correct in rows:
        last[(user_id, canonical_subject(subject), skill)] = (topic or skill or subject, bool(correct))
    fell: dict[int, list[str]] = {}
    for (user_id, _subject, _skill), (label, correct) in sorted(last.items()):
        if not correct:
            fell.setdefault(user_id, []).append(label)
    return fell


async def class_view(db: AsyncSession, cohort: Cohort, now: datetime) -> ClassView:
    students = await roster(db, cohort.id)
    fell = await _fell(db, cohort.id, now)
    quiet_since = now - timedelta(days=QUIET_DAYS)
    at_risk = [AtRisk(s, s.last_active is None or s.last_active < quiet_since, fell.get(s.user_id, []))
               for s in students]
    return ClassView(cohort.name, students, await _heatmap(db, cohort.id, students),
                     [r for r in at_risk if r.quiet or r.fell])


async def results_rows(db: AsyncSession, cohort_id: int,
                       shown: Callable[[datetime], str]) -> list[list[str]]:
    """One CSV row per checked or reported result of the class's students, oldest first: each moment
    as `shown` writes it, the skill as written (its key only when no words were kept)."""
    r = ExerciseResult
    rows = (await db.execute(select(r.user_id, User.display_name, r.created_at, r.subject, r.skill, r.topic,
                                    r.correct, r.source, r.verified).join(
        CohortMember, CohortMember.user_id == r.user_id).join(User, User.id == r.user_id)
        .where(CohortMember.cohort_id == cohort_id).order_by(r.created_at, r.id))).all()
    return [[str(user_id), name or "", shown(at), subject, topic or skill,
             "1" if correct else "0", source, "1" if verified else "0"]
            for user_id, name, at, subject, skill, topic, correct, source, verified in rows]


@dataclass(frozen=True)
class StudentView:
    student: Student
    classes: list[str]
    skills: list[SkillView]
    weeks: list[tuple[str, int, int]]  # week's Monday, right answers, wrong answers
    due: int
    due_items: list[tuple[str, str, datetime | None]]  # subject shown, skill, when due


async def student_for(db: AsyncSession, viewer: Viewer, user_id: int) -> tuple[User, list[str]] | None:
    """The student and the names of their classes the viewer sees; None outside the scope."""
    user = await db.get(User, user_id)
    if user is None:
        return None
    query = select(Cohort.id, Cohort.name).join(CohortMember).where(CohortMember.user_id == user_id)
    classes = [(cid, name) for cid, name in (await db.execute(query.order_by(Cohort.name))).all()
               if viewer.cohort_ids is None or cid in viewer.cohort_ids]
    if viewer.cohort_ids is not None and not classes:
        return None
    return user, [name for _cid, name in classes]


async def _weeks(db: AsyncSession, user_id: int, now: datetime) -> list[tuple[str, int, int]]:
    monday = (now - timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
    start = monday - timedelta(weeks=RESULT_WEEKS - 1)
    counts = {(start + timedelta(weeks=i)).date(): [0, 0] for i in range(RESULT_WEEKS)}
    rows = await db.execute(select(ExerciseResult.created_at, ExerciseResult.correct).where(
        ExerciseResult.user_id == user_id, ExerciseResult.created_at >= start,
        ExerciseResult.verified.is_(True)))
    for at, correct in rows.all():
        week = (at - timedelta(days=at.weekday())).date()
        if week in counts:
            counts[week][0 if correct else 1] += 1
    return [(week.isoformat(), right, wrong) for week, (right, wrong) in counts.items()]


async def student_view(db: AsyncSession, user: User, classes: list[str], learning: Learning,
                       now: datetime) -> StudentView:
    items = await due_items(db, user.id, now, 20)
    skills = await skill_views(db, user.id, learning)
    # A skill as the student wrote it, accents and all: its key (« theoreme-pythagore ») is never shown.
    labels = {(s.subject, s.skill): s.label for s in skills}
    return StudentView(
        student=_student(user), classes=classes, skills=skills,
        weeks=await _weeks(db, user.id, now), due=await due_count(db, user.id, now),
        due_items=[(subject_name(canonical_subject(i.subject), "fr"),
                    labels.get((canonical_subject(i.subject), i.skill), ""), i.due_at) for i in items])


async def class_costs(db: AsyncSession, settings: Settings, cohort_id: int, now: datetime) -> list[CostLine]:
    """The cost meter's week and month for the class's students (bot.billing.costs)."""
    return await cost_lines(db, settings, select(CohortMember.user_id).where(
        CohortMember.cohort_id == cohort_id), now)
