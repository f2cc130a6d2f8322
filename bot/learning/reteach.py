"""A question missed again is taught again.

An item missed twice in a row is not asked again as it is: the next time the student meets it (a
model turn, whose prompt lists it, or a REVISION round, which hands it to the model instead of
replaying it) the model gets the item, the options the student chose and an instruction to explain
the idea another way and to ask a new question on the same skill. That question (interactive_quiz
with `replaces`: the old item's id) is checked by the server like any quiz and kept as an item of
its own whose `replaces_item_id` is the old one, under the old one's subject and skill. Once it is
asked, the old item counts its misses in a row from zero again; an item missed RETIRE_AFTER times
in all is retired at that miss (no longer due: never asked as it is again) and waits for the new
question that replaces it.

Why the model and not another fixed explanation: a true/false item missed ten times in three weeks
came back every day or two with the same words, and mastery stayed low; a tutor steps in.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.learning.items import RETEACH_AFTER, needs_reteach, to_reteach
from bot.learning.quiz_types import quiz_type_of
from bot.learning.rounds import item_topic
from bot.storage.models import QuizItem

__all__ = ["RETEACH_AFTER", "RETIRE_AFTER", "after_answer", "mark_retaught", "pending_item",
           "prompt_reteach", "reteach_block", "reteach_items", "reteach_text"]

RETIRE_AFTER = 4  # misses in all
WRONG_KEPT = 4  # the options chosen when wrong, the last few (what the model is shown)
IN_PROMPT = 2  # items a turn's prompt lists
RETEACH_HEADING = "# À réexpliquer (questions manquées plusieurs fois)"
_QUESTION_CHARS = 240
_OPTION_CHARS = 80
_EXPLANATION_CHARS = 200


def after_answer(item: QuizItem, correct: bool, now: datetime, chosen: int | None = None) -> None:
    """The item's misses after one answer (its schedule already moved by FSRS): in a row, the option
    chosen, and retirement at the RETIRE_AFTER-th miss."""
    if correct:
        item.miss_streak = 0
        return
    item.miss_streak = (item.miss_streak or 0) + 1
    if chosen is not None:
        item.wrong_answers = [*(item.wrong_answers or []), chosen][-WRONG_KEPT:]
    if (item.lapses or 0) >= RETIRE_AFTER and item.retired_at is None:
        item.retired_at = now
        item.due_at = None


async def reteach_items(db: AsyncSession, user_id: int, now: datetime, limit: int) -> list[QuizItem]:
    """The student's items waiting to be taught again: the due ones (longest overdue first), then
    the retired, then the others, the most recently missed first."""
    rows = await db.scalars(select(QuizItem).where(QuizItem.user_id == user_id, to_reteach()))
    return _first(list(rows), now, limit)


async def prompt_reteach(db: AsyncSession, user_id: int, now: datetime) -> tuple[list[QuizItem], int]:
    """What a turn's prompt reads of the items, in one statement: those to teach again
    (`reteach_items`, IN_PROMPT of them) and how many are due (`due_count`). The count is a row
    of one, the items joined to it (none: one row without an item)."""
    due = (select(func.count().label("due")).select_from(QuizItem)
           .where(QuizItem.user_id == user_id, QuizItem.due_at.is_not(None), QuizItem.due_at <= now)
           .subquery())
    rows = (await db.execute(select(due.c.due, QuizItem).select_from(due)
                             .outerjoin(QuizItem, and_(QuizItem.user_id == user_id, to_reteach())))).all()
    items = [item for _, item in rows if item is not None]
    return _first(items, now, IN_PROMPT), int(rows[0][0] or 0)


def _first(items: list[QuizItem], now: datetime, limit: int) -> list[QuizItem]:
    def order(item: QuizItem) -> tuple[int, float]:
        if item.due_at is not None and item.due_at <= now:
            return 0, item.due_at.timestamp()
        answered = item.last_answered_at.timestamp() if item.last_answered_at else 0.0
        return (1 if item.retired_at is not None else 2), -answered

    return sorted(items, key=lambda i: (*order(i), i.id))[:limit]


async def pending_item(db: AsyncSession, user_id: int, item_id: int) -> QuizItem | None:
    """The student's item `item_id` if it waits to be taught again, else None."""
    item = await db.get(QuizItem, item_id)
    if item is None or item.user_id != user_id or not needs_reteach(item):
        return None
    return item


def mark_retaught(old: QuizItem, new: QuizItem, now: datetime) -> None:
    """The new question asked in place of `old`: same subject and skill, linked to it; the old one's
    misses in a row count from zero again (a retired one stays retired: the new one replaces it)."""
    new.replaces_item_id = old.id
    new.subject, new.skill = old.subject, old.skill
    old.retaught_at = now
    old.miss_streak = 0


def _clip(text: str, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def reteach_text(item: QuizItem, label: str) -> str:
    """One item as the model is given it (in French, as the learner block): the question, its
    options and right answer, the options the student chose, the explanation already given."""
    kind = quiz_type_of(item.quiz_type)
    options = tuple(str(o) for o in item.options)

    def named(index: int) -> str:
        if not 0 <= index < kind.count(options):
            return "?"
        return _clip(kind.option_label(options, index, "fr"), _OPTION_CHARS)

    shown = " ; ".join(named(i) for i in range(kind.count(options)))
    wrong = ", ".join(named(int(i)) for i in (item.wrong_answers or [])) or "(non notées)"
    misses = f"manquée {item.lapses} fois" + (", retirée" if item.retired_at is not None else "")
    return (f"- replaces={item.id} · {_clip(label, 60) or item.subject} ({misses}) : "
            f"« {_clip(item.question, _QUESTION_CHARS)} » ({shown}) ; bonne réponse : "
            f"{named(item.correct_index)} ; réponses de l'élève : {wrong} ; explication déjà donnée : "
            f"« {_clip(item.explanation, _EXPLANATION_CHARS)} »")


async def reteach_block(db: AsyncSession, user_id: int, now: datetime, *, handed: int | None = None,
                        items: list[QuizItem] | None = None) -> str:
    """What a turn's prompt carries of the items waiting to be taught again (empty: none). With
    `handed` (a REVISION round gave that item to the model), it is to be done now, that item first.
    `items`: those `prompt_reteach` read, else read here."""
    if items is None:
        items = await reteach_items(db, user_id, now, IN_PROMPT)
    first = None if handed is None else await pending_item(db, user_id, handed)
    if first is not None:
        items = [first, *[i for i in items if i.id != first.id]][:IN_PROMPT]
    if not items:
        return ""
    lines = [RETEACH_HEADING]
    lines.extend([reteach_text(item, await item_topic(db, item)) for item in items])
    lines.append(
        "Ne repose pas ces questions telles quelles. Réexplique l'idée autrement qu'avant (un autre "
        "exemple, des étapes plus petites, une situation concrète), puis pose UNE nouvelle question sur "
        "la même notion avec interactive_quiz et replaces=<son numéro ci-dessus>.")
    lines.append(
        "L'élève révise (REVISION) : fais-le maintenant, pour la première." if first is not None
        else "Fais-le quand l'élève revient à l'une de ces notions ou demande à réviser ; sinon, "
             "n'en parle pas.")
    return "\n".join(lines)
