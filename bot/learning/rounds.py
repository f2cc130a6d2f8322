"""A review round (REVISION / REVIEW): the student's kept quiz items asked again one at a time as
numbered menus, checked on the server with no model call, then the round's score. What the round
is and which items it asks live here; showing and checking a question reuse the quiz's menu and
answer parsing (handlers/review.py, which sees both).

The round is the conversation's pending menu, of its own kind (`review`), so a quiz answer never
takes it for a quiz. Its payload carries the items of the round, the position, the score so far,
and the last inbound message it answered with the reply sent, so that a retried delivery of that
message sends the same reply again instead of answering the next question."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.learning.items import due_items, recently_missed
from bot.storage.models import QuizItem, SkillMastery
from bot.texts import fr_en

REVIEW_KIND = "review"
ROUND_SIZE = 5
# A round the student starts, and the offers of one, take the items due within this much too: an
# item due at their 19:00 study hour is there when they write at 18:40 (else it waited a day more,
# the nudge being for a student who has not written).
REVIEW_AHEAD = timedelta(hours=1)
# Questions due asked right after the verdict on the tutor's quiz, per conversation (handlers/review.py).
WOVEN_MAX = 2


@dataclass(frozen=True)
class Round:
    round_id: str
    user_id: int
    conversation_id: int
    items: tuple[int, ...]
    index: int  # the position of the question pending (== len(items) once the round is over)
    right: int
    asked_at: datetime  # when the pending question was sent
    last_inbound: int | None = None
    last_reply: str = ""
    reteach: int | None = None  # the item waiting to be taught again, handed to the model at the end
    assignment: int | None = None  # the teacher's assignment this round answers (bot.school.assignments)
    woven: bool = False  # a question asked after a quiz's verdict, not asked for (handlers/review.py)

    @property
    def done(self) -> bool:
        return self.index >= len(self.items)

    @property
    def item_id(self) -> int:
        return self.items[self.index]

    def to_menu(self) -> dict[str, Any]:
        return {"round_id": self.round_id, "user_id": self.user_id, "conversation_id": self.conversation_id,
                "items": list(self.items), "index": self.index, "right": self.right,
                "asked_at": self.asked_at.isoformat(), "last_inbound": self.last_inbound,
                "last_reply": self.last_reply, "reteach": self.reteach,
                "assignment": self.assignment, "woven": self.woven}

    def answered(self, correct: bool, inbound_id: int, reply: str, now: datetime) -> Round:
        return replace(self, index=self.index + 1, right=self.right + int(correct), asked_at=now,
                       last_inbound=inbound_id, last_reply=reply)


def round_from_menu(menu: dict[str, Any] | None) -> Round | None:
    """The round held in a pending menu, or None when the menu is something else."""
    if menu is None or menu.get("kind") != REVIEW_KIND:
        return None
    try:
        last, reteach, assignment = menu.get("last_inbound"), menu.get("reteach"), menu.get("assignment")
        return Round(round_id=str(menu["round_id"]), user_id=int(menu["user_id"]),
                     conversation_id=int(menu["conversation_id"]),
                     items=tuple(int(i) for i in menu["items"]), index=int(menu["index"]),
                     right=int(menu["right"]), asked_at=datetime.fromisoformat(menu["asked_at"]),
                     last_inbound=None if last is None else int(last),
                     last_reply=str(menu.get("last_reply", "")),
                     reteach=None if reteach is None else int(reteach),
                     assignment=None if assignment is None else int(assignment),
                     woven=bool(menu.get("woven", False)))
    except (KeyError, TypeError, ValueError):
        return None


async def pick_items(db: AsyncSession, user_id: int, now: datetime) -> tuple[list[QuizItem], bool]:
    """The round's items and whether they are due: the due ones (within REVIEW_AHEAD), longest
    overdue first; when none is, the ones most recently missed. Never one waiting to be taught again
    (bot.learning.reteach): the round hands that one to the model."""
    due = await due_items(db, user_id, now + REVIEW_AHEAD, ROUND_SIZE, replay_only=True)
    if due:
        return due, True
    return await recently_missed(db, user_id, ROUND_SIZE), False


async def has_items(db: AsyncSession, user_id: int) -> bool:
    return await db.scalar(select(QuizItem.id).where(QuizItem.user_id == user_id).limit(1)) is not None


def new_round(user_id: int, conversation_id: int, items: list[QuizItem], now: datetime,
              reteach: int | None = None, assignment: int | None = None) -> Round:
    return Round(round_id=secrets.token_hex(6), user_id=user_id, conversation_id=conversation_id,
                 items=tuple(item.id for item in items), index=0, right=0, asked_at=now, reteach=reteach,
                 assignment=assignment)


async def item_topic(db: AsyncSession, item: QuizItem) -> str:
    """The skill's label as the student first saw it ("" for a question with no topic)."""
    if not item.skill:
        return ""
    label = await db.scalar(select(SkillMastery.label).where(
        SkillMastery.user_id == item.user_id, SkillMastery.subject == item.subject,
        SkillMastery.skill == item.skill))
    return label or item.skill


def _plural(count: int) -> str:
    return "s" if count > 1 else ""


def round_intro(count: int, due: bool, language: str, new: int = 0) -> str:
    """The round's first line; `new` of the `count` questions are the class's, never answered yet
    (they come last)."""
    old, s, ns = count - new, _plural(count - new), _plural(new)
    fresh_fr = f"{new} nouvelle{ns} question{ns} de ta classe"
    fresh_en = f"{new} new question{ns} from your class"
    if not old:
        return fr_en(language, f"{fresh_fr} pour t'entraîner. C'est parti !",
                     f"{fresh_en} to practise. Here we go!")
    then_fr, then_en = (f", puis {fresh_fr}", f", then {fresh_en}") if new else ("", "")
    if due:
        return fr_en(language, f"{old} question{s} à revoir{then_fr}. C'est parti !",
                     f"{old} question{s} to review{then_en}. Here we go!")
    return fr_en(language,
                 f"Rien n'est à revoir aujourd'hui : reprenons {'les' if old > 1 else 'la'} {old} "
                 f"question{s} manquée{s} en dernier{then_fr}.",
                 f"Nothing is due today: let's retry the {old} question{s} you missed last{then_en}.")


def score_line(right: int, total: int, language: str, homework: bool = False) -> str:
    """« 4/5 — bravo ! »: the round's score and a word for it (a teacher's assignment: « Devoir »)."""
    if right == total:
        word = fr_en(language, "parfait, bravo !", "perfect, well done!")
    elif 2 * right >= total:
        word = fr_en(language, "bravo !", "well done!")
    else:
        word = fr_en(language, "courage : ces questions reviendront bientôt.",
                     "keep going: these questions will come back soon.")
    if homework:
        return fr_en(language, f"Devoir terminé : {right}/{total} — {word}",
                     f"Homework done: {right}/{total} — {word}")
    return fr_en(language, f"Révision terminée : {right}/{total} — {word}",
                 f"Review done: {right}/{total} — {word}")
