"""A teacher's own questions for a class: the CSV or XLSX file of `cohorts items import NAME FILE`
(and of the dashboard's class page), read and checked whole before anything is written, then added
to the class's bank in one transaction.

One question per row. The columns are `question`, `choix_1` … `choix_4` (two to four filled, from
the first on), `bonne_reponse` (the number of the right choice, or its text), `explication`,
`matiere`, `notion`, or their English names (`question`, `option_1` … `option_4`, `answer`,
`explanation`, `subject`, `skill`); headers are compared folded (bot.school.sheets), so « Bonne
réponse » and « Matière » are these. « Vrai » / « Faux » (« True » / « False ») as the two choices
make a true-or-false item, stored as the true_false_quiz tool stores one.

The subject must be one of the programme's (bot.learning: « Maths » is « Mathématiques »; « Autre »
is accepted when written): a name we do not know is refused with the list, rather than filed
under « Autre » where no teacher would look for it. The notion is required too: it is the skill
the item trains (its key by bot.learning's rules, its label as written), which review, mastery
and assignments go by.

A question is the same when its type, text, choices and right answer are, folded (case, spaces):
its fingerprint is unique per class, so importing a file again adds nothing, and a row repeating
another is counted as already there.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel.inbound import clean_text
from bot.learning import SUBJECTS, known_subject, skill_of
from bot.school.sheets import SheetError, in_line_order, line_label, read_table, too_many_rows
from bot.storage.models import ClassItem
from bot.texts import fr_en

__all__ = ["COLUMNS", "MAX_FILE_BYTES", "MAX_ROWS", "ItemRow", "ItemsError", "add_items", "bank_counts",
           "read_items"]

CHOICES = ("choice_1", "choice_2", "choice_3", "choice_4")
# Every header a teacher may write for each column, folded when compared (bot.school.sheets).
COLUMNS = {
    "question": "question", "énoncé": "question", "intitulé": "question", "questions": "question",
    **{f"{word}_{n}": f"choice_{n}" for n in range(1, 5)
       for word in ("choix", "option", "choice", "proposition", "réponse")},
    "bonne_reponse": "answer", "bonne réponse": "answer", "réponse correcte": "answer", "answer": "answer",
    "correct_answer": "answer", "solution": "answer",
    "explication": "explanation", "explanation": "explanation", "correction": "explanation",
    "matiere": "subject", "matière": "subject", "discipline": "subject", "subject": "subject",
    "notion": "skill", "compétence": "skill", "chapitre": "skill", "skill": "skill", "topic": "skill",
}
REQUIRED = ("question", "choice_1", "choice_2", "answer", "subject", "skill")
MAX_ROWS = 2000  # one transaction; a year's questions of one class are a few hundred
MAX_FILE_BYTES = 1024 * 1024
QUESTION_MAX, CHOICE_MAX, EXPLANATION_MAX, SKILL_MAX = 1000, 200, 1500, 200  # as the quiz tools take them
TRUE_WORDS, FALSE_WORDS = frozenset({"vrai", "true"}), frozenset({"faux", "false"})


@dataclass(frozen=True)
class ItemRow:
    line: int  # in the file, 1 = the header
    quiz_type: str  # mcq | tf
    question: str
    options: tuple[str, ...]  # a true-or-false item: ("true", "false"), as true_false_quiz keeps it
    correct_index: int
    explanation: str
    subject: str  # canonical
    skill: str  # the key
    skill_label: str

    @property
    def fingerprint(self) -> str:
        folded = [self.quiz_type, _fold(self.question), [_fold(o) for o in self.options], self.correct_index]
        return hashlib.sha256(json.dumps(folded, ensure_ascii=False).encode()).hexdigest()


class ItemsError(SheetError):
    """The file cannot be imported; `problems` are « line N: what is wrong », in file order."""


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


class ProblemAt:
    """Collects one row's problems as « ligne N : … » in the operator's language."""

    def __init__(self, line: int, language: str | None, problems: list[str]) -> None:
        self.line, self.language, self.problems, self.before = line, language, problems, len(problems)

    def __call__(self, fr: str, en: str) -> None:
        self.problems.append(f"{line_label(self.language, self.line)}: {fr_en(self.language, fr, en)}")

    @property
    def found(self) -> bool:
        return len(self.problems) > self.before


_NUMBERED = re.compile(r"(?:choix|option|choice|n°|no|#)?\s*(\d+)\s*\)?", re.IGNORECASE)


def _answer(raw: str, choices: list[str], problem: ProblemAt) -> int | None:
    """The zero-based choice an answer names: its number (« 2 », « choix 2 »), else its text. A bare
    number that is also another choice's text (« 4 » among 3, 4, 5, 6) is refused as ambiguous."""
    by_text = next((i for i, choice in enumerate(choices) if _fold(choice) == _fold(raw)), None)
    numbered = _NUMBERED.fullmatch(raw)
    if numbered is None:
        if by_text is None:
            problem(f"la bonne réponse « {raw} » n'est aucun des choix",
                    f"the answer « {raw} » is none of the choices")
        return by_text
    number = int(numbered.group(1))
    by_number = number - 1 if 1 <= number <= len(choices) else None
    if by_text is not None and by_number is not None and by_text != by_number and raw.isdigit():
        problem(f"la bonne réponse {raw} est à la fois le choix {number} et le texte du choix "
                f"{by_text + 1} : écrivez « choix {by_text + 1} » ou « choix {number} »",
                f"the answer {raw} is both choice {number} and the text of choice {by_text + 1}: "
                f"write « choice {by_text + 1} » or « choice {number} »")
        return None
    if by_number is None and by_text is None:
        problem(f"la bonne réponse {raw} n'est pas un numéro de choix (1 à {len(choices)})",
                f"the answer {raw} is not a choice number (1 to {len(choices)})")
        return None
    return by_number if by_number is not None else by_text


def _choices(cells: dict[str, str], problem: ProblemAt) -> list[str]:
    filled = [clean_text(cells.get(name, "")).strip() for name in CHOICES]
    last = max((i for i, choice in enumerate(filled) if choice), default=-1)
    gap = next((i for i in range(last) if not filled[i]), None)
    if gap is not None:
        problem(f"le choix {gap + 1} est vide alors que le choix {last + 1} est rempli",
                f"choice {gap + 1} is empty while choice {last + 1} is filled")
    choices = [choice for choice in filled if choice]
    if len(choices) < 2:
        problem("il faut au moins 2 choix", "at least 2 choices are needed")
    if any(len(choice) > CHOICE_MAX for choice in choices):
        problem(f"un choix dépasse {CHOICE_MAX} caractères",
                f"a choice is longer than {CHOICE_MAX} characters")
    if len({_fold(c) for c in choices}) != len(choices):
        problem("deux choix sont identiques", "two choices are the same")
    return choices


def _texts(cells: dict[str, str], problem: ProblemAt) -> tuple[str, str, str | None, str]:
    """(question, explanation, canonical subject, notion), each checked."""
    question, explanation, subject, notion = (clean_text(cells.get(name, "")).strip()
                                              for name in ("question", "explanation", "subject", "skill"))
    if not question:
        problem("la question est vide", "the question is empty")
    elif len(question) > QUESTION_MAX:
        problem(f"la question dépasse {QUESTION_MAX} caractères",
                f"the question is longer than {QUESTION_MAX} characters")
    if len(explanation) > EXPLANATION_MAX:
        problem(f"l'explication dépasse {EXPLANATION_MAX} caractères",
                f"the explanation is longer than {EXPLANATION_MAX} characters")
    canonical = known_subject(subject) if subject else None
    if not subject:
        problem("la matière est vide", "the subject is empty")
    elif canonical is None:
        problem(f"« {subject} » n'est pas une matière ; au choix : {', '.join(SUBJECTS)}",
                f"« {subject} » is not a subject; one of: {', '.join(SUBJECTS)}")
    if not notion:
        problem("la notion est vide", "the skill is empty")
    elif len(notion) > SKILL_MAX:
        problem(f"la notion dépasse {SKILL_MAX} caractères",
                f"the skill is longer than {SKILL_MAX} characters")
    return question, explanation, canonical, notion


def _row(line: int, cells: dict[str, str], language: str | None, problems: list[str]) -> ItemRow | None:
    problem = ProblemAt(line, language, problems)
    question, explanation, subject, notion = _texts(cells, problem)
    choices = _choices(cells, problem)
    raw_answer = clean_text(cells.get("answer", "")).strip()
    index = None
    if not raw_answer:
        problem("la bonne réponse est vide", "the answer is empty")
    elif len(choices) >= 2:
        index = _answer(raw_answer, choices, problem)
    if problem.found or index is None or subject is None:
        return None
    key, label = skill_of(subject, notion)
    trues = [_fold(c) in TRUE_WORDS for c in choices]
    if len(choices) == 2 and sum(trues) == 1 and any(_fold(c) in FALSE_WORDS for c in choices):
        # Stored as true_false_quiz stores one: option 0 is true, whichever order the file had.
        right = 0 if trues[index] else 1
        return ItemRow(line, "tf", question, ("true", "false"), right, explanation, subject, key, label)
    return ItemRow(line, "mcq", question, tuple(choices), index, explanation, subject, key, label)


def read_items(data: bytes, filename: str, language: str | None = "fr") -> list[ItemRow]:
    """The questions of an items file (CSV or XLSX), every row checked; ItemsError lists each bad row
    by line number, in `language`. Blank lines are skipped."""
    if len(data) > MAX_FILE_BYTES:
        raise ItemsError([fr_en(language, f"le fichier dépasse {MAX_FILE_BYTES // 1024} Ko : coupez-le",
                                f"the file is over {MAX_FILE_BYTES // 1024} KB: split it")], language)
    try:
        table = read_table(data, filename, COLUMNS, REQUIRED, language)
    except SheetError as exc:
        raise ItemsError(exc.problems, language) from None
    if too_many := too_many_rows(table, MAX_ROWS, language, "questions", "questions"):
        raise ItemsError([too_many], language)
    problems = list(table.problems)
    rows = [row for line, cells in table.rows if (row := _row(line, cells, language, problems))]
    if not table.rows and not problems:
        problems.append(f"{line_label(language, 2)}: " + fr_en(language, "le fichier n'a aucune question",
                                                               "the file has no question rows"))
    if problems:
        raise ItemsError(in_line_order(problems), language)
    return rows


async def add_items(db: AsyncSession, cohort_id: int, rows: list[ItemRow], now: datetime) -> tuple[int, int]:
    """The checked rows added to the class's bank: (added, already there). The caller commits; two
    imports of one file at once meet the fingerprint's unique constraint (IntegrityError)."""
    known = set(await db.scalars(select(ClassItem.fingerprint).where(ClassItem.cohort_id == cohort_id)))
    added = 0
    for row in rows:
        fingerprint = row.fingerprint
        if fingerprint in known:
            continue
        known.add(fingerprint)
        db.add(ClassItem(cohort_id=cohort_id, subject=row.subject, skill=row.skill,
                         skill_label=row.skill_label, quiz_type=row.quiz_type, question=row.question,
                         options=list(row.options), correct_index=row.correct_index,
                         explanation=row.explanation, fingerprint=fingerprint, created_at=now))
        added += 1
    await db.flush()
    return added, len(rows) - added


async def bank_counts(db: AsyncSession, cohort_id: int) -> list[tuple[str, str, int]]:
    """The class's bank as (subject, skill label, questions), by subject then skill; one label per
    key (the first one imported)."""
    rows = (await db.execute(select(ClassItem.subject, ClassItem.skill, ClassItem.skill_label)
                             .where(ClassItem.cohort_id == cohort_id).order_by(ClassItem.id))).all()
    counts = Counter((subject, skill) for subject, skill, _label in rows)
    labels: dict[tuple[str, str], str] = {}
    for subject, skill, label in rows:
        labels.setdefault((subject, skill), label)
    return [(subject, labels[subject, skill], counts[subject, skill])
            for subject, skill in sorted(counts, key=lambda k: (k[0], labels[k].casefold()))]
