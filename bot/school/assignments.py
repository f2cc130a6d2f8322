"""A teacher's assignment: N questions on one skill, before a date, set to a whole class.

`assign` checks the request whole (a clear line, nothing stored, on a bad one) and, in the caller's
transaction, stores the assignment, one `AssignmentWork` per student and one scheduled send each
(`bot.channel.scheduled`): the console and the dashboard never wait on Twilio. The periodic job
`assignment_notices` sends them: inside WhatsApp's 24 h window a message with a « Commencer »
button (id `devoir:1`, handlers/buttons.py turns it into DEVOIR); outside it the approved template
ASSIGNMENT_TEMPLATE_SID ({{1}} the skill, {{2}} the number of questions, {{3}} the due date) when
set, else nothing: the student is told when they next write (handlers/assignment.py); a student who
writes by SMS gets an SMS that says to write DEVOIR. `notified_by` is recorded only once Twilio
accepted the send (or the reply told them).

DEVOIR draws the student's questions: the class's bank on that skill first (`student_copy`), then the
student's own kept quiz items on it when the bank has too few; they are asked as a REVISION round
(bot.learning.rounds) that carries the assignment's id, checked on the server with no model call."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING

from sqlalchemy import ColumnElement, SQLColumnExpression, and_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel.buttons import Menu
from bot.channel.outbound import in_whatsapp_window
from bot.channel.scheduled import Outgoing, deliver_due, plan
from bot.clock import zone
from bot.learning import OTHER, due_text, resolve_skill, skill_key, skill_label, work_score
from bot.periodic import Job
from bot.school.bank import bank_items, student_copy
from bot.school.errors import SchoolError
from bot.storage.models import (
    Assignment,
    AssignmentWork,
    ClassItem,
    Cohort,
    CohortMember,
    QuizItem,
    ScheduledSend,
    User,
)
from bot.texts import fr_en

if TYPE_CHECKING:
    from bot.services import Services

__all__ = [
    "ASSIGNMENT_MENU",
    "NOTICE",
    "QUESTIONS_MAX",
    "AssignmentError",
    "ClassAssignment",
    "answered",
    "assign",
    "assignment_jobs",
    "class_assignments",
    "draw_items",
    "local_today",
    "notice_menu",
    "notice_text",
    "open_work",
    "parse_due",
    "send_assignment_notices",
    "told",
    "untold",
    "untold_work",
]

ASSIGNMENT_MENU = "devoir"  # the button's id: devoir:1 « Commencer »
NOTICE = "assignment"  # the scheduled sends' and the sent messages' kind
QUESTIONS_MAX = 20
SKILL_MAX = 200
INTERVAL_S = 30.0


class AssignmentError(SchoolError):
    """An assignment refused as asked (its one line says why, in the operator's language)."""


def parse_due(text: str | None, today: date, language: str) -> date | None:
    """AAAA-MM-JJ, today or later; None when not given."""
    if text is None or not text.strip():
        return None
    try:
        day = date.fromisoformat(text.strip())
    except ValueError:
        given = text.strip()
        raise AssignmentError(fr_en(language, f"date invalide {given!r} : écrire AAAA-MM-JJ (2026-03-10)",
                                    f"invalid date {given!r}: write YYYY-MM-DD (2026-03-10)")) from None
    if day < today:
        raise AssignmentError(fr_en(language, f"la date {day.isoformat()} est passée",
                                    f"the date {day.isoformat()} is in the past"))
    return day


def _check(skill: str, questions: int, language: str) -> None:
    if not skill.strip() or not skill_key(skill):
        raise AssignmentError(fr_en(language, "la notion est vide", "the skill is empty"))
    if len(skill.strip()) > SKILL_MAX:
        raise AssignmentError(fr_en(language, f"la notion a plus de {SKILL_MAX} caractères",
                                    f"the skill is longer than {SKILL_MAX} characters"))
    if not 1 <= questions <= QUESTIONS_MAX:
        raise AssignmentError(fr_en(language,
                                    f"le nombre de questions va de 1 à {QUESTIONS_MAX}, pas {questions}",
                                    f"the number of questions is 1 to {QUESTIONS_MAX}, not {questions}"))


async def _subject(db: AsyncSession, cohort_id: int, key: str) -> str:
    """The bank's subject for the skill, else the one the class's students met it in, else « Autre »."""
    found = await db.scalar(select(ClassItem.subject).where(ClassItem.cohort_id == cohort_id,
                                                            ClassItem.skill == key).limit(1))
    if found is None:
        found = await db.scalar(select(QuizItem.subject).join(
            CohortMember, CohortMember.user_id == QuizItem.user_id).where(
            CohortMember.cohort_id == cohort_id, QuizItem.skill == key).limit(1))
    return found or OTHER


async def assign(db: AsyncSession, cohort: Cohort, *, skill: str, questions: int, due_on: date | None,
                 created_by: str, now: datetime, language: str) -> Assignment:
    """Stores the assignment, each student's work and notice (the caller commits)."""
    _check(skill, questions, language)
    key, label = skill_key(skill), skill_label(skill)
    found = Assignment(cohort_id=cohort.id, subject=await _subject(db, cohort.id, key), skill=key,
                       skill_label=label, questions=questions, due_on=due_on, created_by=created_by,
                       created_at=now)
    db.add(found)
    await db.flush()
    members = list(await db.scalars(select(CohortMember.user_id).where(CohortMember.cohort_id == cohort.id)))
    for user_id in members:
        db.add(AssignmentWork(assignment_id=found.id, user_id=user_id, asked=0, correct=0))
        await plan(db, now, key=f"{NOTICE}:{found.id}:{user_id}", kind=NOTICE, user_id=user_id, slot_at=now)
    await db.flush()
    return found


def notice_text(a: Assignment, language: str, channel: str = "whatsapp") -> str:
    """« 📚 Devoir : 5 questions sur les fractions, avant le mar. 10 mars »; by SMS, how to start;
    "plain": the line alone (a list of them)."""
    many = "s" if a.questions > 1 else ""
    due = ("" if a.due_on is None else fr_en(language, f", avant le {due_text(a.due_on, language)}",
                                                f", due {due_text(a.due_on, language)}"))
    text = fr_en(language, f"Devoir : {a.questions} question{many} sur {a.skill_label}{due}",
                 f"Homework: {a.questions} question{many} on {a.skill_label}{due}")
    if channel == "sms":
        return text + fr_en(language, ". Écris DEVOIR pour commencer.", ". Send HOMEWORK to start.")
    return text if channel == "plain" else f"📚 {text}"


def notice_menu(a: Assignment, language: str) -> Menu:
    return Menu(menu_id=ASSIGNMENT_MENU, body=notice_text(a, language), language=language,
                options=(fr_en(language, "Commencer", "Start"),))


def _template(services: Services, a: Assignment, language: str) -> tuple[str, dict[str, str]] | None:
    sid = services.settings.learning.assignment_template_sid
    if not sid:
        return None
    due = "-" if a.due_on is None else due_text(a.due_on, language)
    return sid, {"1": a.skill_label[:60], "2": str(a.questions), "3": due}


async def _outgoing(services: Services, db: AsyncSession, row: ScheduledSend,
                    ways: dict[int, str]) -> Outgoing | None:
    assignment_id = int(row.key.split(":")[1])
    work = await db.get(AssignmentWork, (assignment_id, row.user_id))
    found, user = await db.get(Assignment, assignment_id), await db.get(User, row.user_id)
    if work is None or found is None or user is None or work.notified_at is not None or work.started_at:
        return None  # told meanwhile (they wrote), or already at it
    language = user.language or "fr"
    if user.last_channel == "sms":
        ways[row.id] = "sms"
        return Outgoing(user=user, text=notice_text(found, language, "sms"), channel="sms", kind=NOTICE)
    if in_whatsapp_window(services, user):
        ways[row.id] = "whatsapp"
        return Outgoing(user=user, text=notice_text(found, language), channel="whatsapp", kind=NOTICE,
                        menu=notice_menu(found, language))
    template = _template(services, found, language)
    if template is None:
        return None  # nothing may go outside the window: told when they next write
    ways[row.id] = "template"
    return Outgoing(user=user, text=notice_text(found, language), channel="whatsapp", kind=NOTICE,
                    template=template)


async def send_assignment_notices(services: Services, now: datetime | None = None) -> int:
    """The job: sends the notices planned; returns how many Twilio accepted. Each accepted one is
    recorded on the student's work with the way it went."""
    now = now or services.clock()
    ways: dict[int, str] = {}

    async def render(services: Services, db: AsyncSession, row: ScheduledSend,
                     now: datetime) -> Outgoing | None:
        return await _outgoing(services, db, row, ways)

    sent = await deliver_due(services, now, {NOTICE: render})
    if ways:
        async with services.sessions() as db:
            for row in await db.scalars(select(ScheduledSend).where(ScheduledSend.id.in_(list(ways)),
                                                                    ScheduledSend.status == "sent")):
                await db.execute(update(AssignmentWork).where(
                    AssignmentWork.assignment_id == int(row.key.split(":")[1]),
                    AssignmentWork.user_id == row.user_id, AssignmentWork.notified_at.is_(None))
                    .values(notified_at=now, notified_by=ways[row.id]))
            await db.commit()
    return sent


async def _tick(services: Services, now: datetime) -> None:
    await send_assignment_notices(services, now)


def assignment_jobs(interval_s: float = INTERVAL_S) -> list[Job]:
    """For the composition root: the job that tells each student of a new assignment."""
    return [Job(name="assignment_notices", interval_s=interval_s, fn=_tick)]


# --- the student's side ------------------------------------------------------------------------


async def open_work(db: AsyncSession, user_id: int) -> list[tuple[Assignment, AssignmentWork]]:
    """The student's unfinished assignments, the soonest due first (those without a date last)."""
    rows = await db.execute(
        select(Assignment, AssignmentWork).join(AssignmentWork, AssignmentWork.assignment_id == Assignment.id)
        .where(AssignmentWork.user_id == user_id, AssignmentWork.finished_at.is_(None))
        .order_by(Assignment.due_on.is_(None), Assignment.due_on, Assignment.id))
    return [(a, w) for a, w in rows.all()]


def untold_work(user_id: SQLColumnExpression[int] | int) -> ColumnElement[bool]:
    """The student's work rows of assignments nobody told them of yet (`untold`'s condition, which
    a message's arrival looks for with EXISTS: most messages find none)."""
    return and_(AssignmentWork.user_id == user_id, AssignmentWork.notified_at.is_(None),
                AssignmentWork.started_at.is_(None), AssignmentWork.finished_at.is_(None))


async def untold(db: AsyncSession, user_id: int) -> list[Assignment]:
    """The student's assignments nobody told them of yet (none could be sent outside the window)."""
    return list(await db.scalars(
        select(Assignment).join(AssignmentWork, AssignmentWork.assignment_id == Assignment.id)
        .where(untold_work(user_id)).order_by(Assignment.id)))


async def told(db: AsyncSession, user_id: int, assignment_ids: list[int], now: datetime) -> None:
    """Told in a reply to their own message (the caller commits)."""
    await db.execute(update(AssignmentWork).where(
        AssignmentWork.user_id == user_id, AssignmentWork.assignment_id.in_(assignment_ids),
        AssignmentWork.notified_at.is_(None)).values(notified_at=now, notified_by="reply"))


async def draw_items(db: AsyncSession, user_id: int, found: Assignment, now: datetime,
                     conversation_id: int | None) -> list[QuizItem]:
    """The assignment's questions for this student: the class's bank on the skill, then the student's
    own kept items on it (the model's quizzes) when the bank has too few."""
    bank = [c for c in await bank_items(db, user_id, skill=found.skill) if c.cohort_id == found.cohort_id]
    items = [await student_copy(db, c, user_id, now, conversation_id) for c in bank[:found.questions]]
    if len(items) < found.questions:
        keys = {found.skill, await resolve_skill(db, user_id, found.subject, found.skill_label)}
        taken = [i.id for i in items]
        items += list(await db.scalars(
            select(QuizItem).where(QuizItem.user_id == user_id, QuizItem.skill.in_(keys),
                                   QuizItem.class_item_id.is_(None), QuizItem.id.not_in(taken))
            .order_by(QuizItem.id).limit(found.questions - len(items))))
    return items


async def answered(db: AsyncSession, assignment_id: int, user_id: int, correct: bool, finished: bool,
                   now: datetime) -> None:
    """One answer of the assignment's round (the caller commits, with the answer's records)."""
    work = await db.get(AssignmentWork, (assignment_id, user_id))
    if work is None:
        return
    work.asked += 1
    work.correct += int(correct)
    if finished:
        work.finished_at = now


# --- the teacher's side ------------------------------------------------------------------------


@dataclass(frozen=True)
class ClassAssignment:
    """An assignment as the class page and `cohorts show` list it: each student's score."""

    id: int
    skill_label: str
    questions: int
    due_on: date | None
    due: str  # « mar. 10 mars », or ""
    finished: int
    students: int
    scores: dict[int, str]  # user id -> « 2/2 », « 1/2 (en cours) », « pas commencé »


async def class_assignments(db: AsyncSession, cohort_id: int, language: str) -> list[ClassAssignment]:
    """The class's assignments, the latest first."""
    found: list[ClassAssignment] = []
    for a in await db.scalars(select(Assignment).where(Assignment.cohort_id == cohort_id)
                              .order_by(Assignment.created_at.desc(), Assignment.id.desc())):
        works = list(await db.scalars(select(AssignmentWork).where(AssignmentWork.assignment_id == a.id)))
        found.append(ClassAssignment(
            id=a.id, skill_label=a.skill_label, questions=a.questions, due_on=a.due_on,
            due="" if a.due_on is None else due_text(a.due_on, language),
            finished=sum(w.finished_at is not None for w in works), students=len(works),
            scores={w.user_id: work_score(w, language) for w in works}))
    return found


def local_today(now: datetime, timezone: str) -> date:
    return now.astimezone(zone(timezone)).date()
