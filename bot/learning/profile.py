"""What is known of a learner, read back: each skill's mastery as a status, the skills to work on,
the items due, and the compact block the tutor's prompt carries.

Everything here comes from answers the server checked (SkillMastery is moved by nothing else);
what the model only reported is counted apart by bot.learning.progress.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.config_groups import Learning
from bot.learning.items import due_count
from bot.learning.mastery import is_mastered
from bot.learning.subjects import OTHER, SUBJECTS, canonical_subject
from bot.storage.models import SkillMastery

MASTERED, LEARNING, REVIEW = "mastered", "learning", "review"
STATUSES = (MASTERED, LEARNING, REVIEW)
# Below this P(known) the student more likely does not know the skill than knows it: « à revoir ».
REVIEW_BELOW = 0.5
BLOCK_MAX_BYTES = 500
BLOCK_LABEL_MAX = 40
LEARNER_HEADING = "# L'élève (réponses vérifiées)"

# Short names to show: an SMS line or a parent's summary has no room for « Histoire-Géographie ».
_SHORT = {"Mathématiques": "Maths", "Histoire-Géographie": "Histoire-Géo"}
_ENGLISH = {
    "Mathématiques": "Maths", "Français": "French", "SVT": "Life sciences",
    "Physique-Chimie": "Physics-Chemistry", "Histoire-Géographie": "History-Geography",
    "Anglais": "English", "Philosophie": "Philosophy", "EDHC": "Civics", "Informatique": "Computing",
    "Espagnol": "Spanish", "Allemand": "German", "Arabe": "Arabic", "Latin": "Latin",
    "Économie": "Economics", "SES": "Social sciences", "Comptabilité": "Accounting", "Lecture": "Reading",
    "Éducation musicale": "Music", "Arts plastiques": "Art", "EPS": "PE", OTHER: "Other",
}


def subject_name(subject: str, language: str) -> str:
    """The canonical subject as shown to a person (short, in their language)."""
    if language == "en":
        return _ENGLISH.get(subject, subject)
    return _SHORT.get(subject, subject)


def subject_order(subject: str) -> int:
    return SUBJECTS.index(subject) if subject in SUBJECTS else len(SUBJECTS)


@dataclass(frozen=True)
class SkillView:
    subject: str  # canonical
    skill: str  # the key ("" = the subject as a whole)
    label: str  # as written, to show
    p_known: float
    answers: int
    correct: int
    status: str  # MASTERED | LEARNING | REVIEW

    def shown(self, language: str) -> str:
        return self.label or subject_name(self.subject, language)


@dataclass(frozen=True)
class LearnerView:
    level: str | None
    skills: tuple[SkillView, ...]
    due: int


def status_of(p_known: float, learning: Learning) -> str:
    if is_mastered(p_known, learning):
        return MASTERED
    return REVIEW if p_known < REVIEW_BELOW else LEARNING


async def skill_views(db: AsyncSession, user_id: int, learning: Learning) -> list[SkillView]:
    """The student's skills with at least one checked answer, by subject then label. Rows whose
    subject is not canonical (written before subjects were) are merged into their canonical one:
    counts add up, the most recently updated estimate stands."""
    rows = (await db.scalars(select(SkillMastery).where(SkillMastery.user_id == user_id)
                             .order_by(SkillMastery.updated_at))).all()
    merged: dict[tuple[str, str], SkillView] = {}
    for row in rows:
        if row.answers <= 0:
            continue
        subject = canonical_subject(row.subject)
        before = merged.get((subject, row.skill))
        answers = row.answers + (before.answers if before else 0)
        correct = row.correct + (before.correct if before else 0)
        merged[(subject, row.skill)] = SkillView(
            subject=subject, skill=row.skill, label=" ".join((row.label or "").split()),
            p_known=row.p_known, answers=answers, correct=correct, status=status_of(row.p_known, learning))
    return sorted(merged.values(), key=lambda s: (subject_order(s.subject), s.subject, s.label.casefold()))


def to_work_on(skills: list[SkillView] | tuple[SkillView, ...], limit: int,
               *, struggling: bool = False) -> list[SkillView]:
    """The skills not mastered, the lowest P(known) first (more answers first at a tie); with
    `struggling`, only those « à revoir »."""
    wanted = [s for s in skills if s.status == REVIEW or (not struggling and s.status == LEARNING)]
    return sorted(wanted, key=lambda s: (s.p_known, -s.answers, s.label))[:limit]


async def learner_view(db: AsyncSession, user_id: int, level: str | None, learning: Learning,
                       now: datetime, due: int | None = None) -> LearnerView:
    """`due`: the items due now, when the caller read them (bot.learning.reteach.prompt_reteach)."""
    skills = await skill_views(db, user_id, learning)
    return LearnerView(level=level, skills=tuple(skills),
                       due=due if due is not None else await due_count(db, user_id, now))


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fit(head: str, items: list[str], room: int) -> str:
    """`head` and as many items as fit in `room` bytes (at least the line's head), « … » when cut."""
    line = head
    for n, item in enumerate(items):
        candidate = line + (", " if n else "") + item
        more = " …" if n + 1 < len(items) else ""
        if len((candidate + more).encode()) > room:
            return line + (" …" if n else "…")
        line = candidate
    return line


def learner_block(view: LearnerView) -> str:
    """The prompt's learner block, at most BLOCK_MAX_BYTES: class, skills mastered, skills to work
    on (lowest P(known) first, with its %), items due. Empty when nothing is known yet."""
    mastered = [s for s in view.skills if s.status == MASTERED]
    weak = to_work_on(view.skills, 6)
    if not (view.level or view.skills or view.due):
        return ""
    lines = [LEARNER_HEADING]
    if view.level:
        lines.append(f"- Classe : {_clip(view.level, 30)} (adapte-toi à ce niveau)")
    used = sum(len(line.encode()) + 1 for line in lines)
    due = f"- À revoir (REVISION) : {view.due} question{'s' if view.due > 1 else ''}" if view.due else ""
    room = BLOCK_MAX_BYTES - used - (len(due.encode()) + 1 if due else 0)
    if weak:
        items = [f"{_clip(s.shown('fr'), BLOCK_LABEL_MAX)} ({round(100 * s.p_known)} %)" for s in weak]
        line = _fit("- À travailler : ", items, min(room - 1, (room - 1) // (2 if mastered else 1)))
        lines.append(line)
        room -= len(line.encode()) + 1
    if mastered:
        items = [_clip(s.shown("fr"), BLOCK_LABEL_MAX) for s in sorted(mastered, key=lambda s: -s.answers)]
        line = _fit("- Acquis : ", items, room - 1)
        lines.append(line)
    if due:
        lines.append(due)
    return "\n".join(lines)
