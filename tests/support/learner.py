"""Learner rows written straight into the database, as the quiz and review paths leave them: exercise
results (old free-text subjects too), mastery per skill and quiz items with a due date."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from bot.services import Services
from bot.storage.models import ExerciseResult, QuizItem, SkillMastery


async def add_results(services: Services, user_id: int, rows: list[tuple[str, bool]], at: datetime, *,
                      verified: bool = True) -> None:
    """(subject, correct) results at `at`; unverified ones as report_exercise_result stores them."""
    async with services.sessions() as db:
        for subject, correct in rows:
            db.add(ExerciseResult(user_id=user_id, subject=subject, correct=correct, created_at=at,
                                  verified=verified, source="quiz" if verified else "report"))
        await db.commit()


async def add_mastery(services: Services, user_id: int, subject: str, label: str, p_known: float,
                      answers: int, correct: int, at: datetime, skill: str | None = None) -> None:
    async with services.sessions() as db:
        db.add(SkillMastery(user_id=user_id, subject=subject, skill=label.lower() if skill is None else skill,
                            label=label, p_known=p_known, answers=answers, correct=correct, updated_at=at))
        await db.commit()


async def add_item(services: Services, user_id: int, due_at: datetime | None, *,
                   subject: str = "Mathématiques", skill: str = "fraction", last_correct: bool | None = False,
                   **fields: Any) -> int:
    """A quiz item answered once (due at `due_at`), or never answered (`due_at` None)."""
    async with services.sessions() as db:
        item = QuizItem(user_id=user_id, quiz_id=uuid.uuid4().hex[:16], quiz_type="mcq",
                        question="Combien font 1/2 + 1/4 ?", options=["3/4", "2/6", "1/8", "2/4"],
                        correct_index=0, explanation="Même dénominateur.", subject=subject, skill=skill,
                        card={} if due_at else None, due_at=due_at, last_correct=last_correct,
                        last_answered_at=due_at, answers=1 if due_at else 0, **fields)
        db.add(item)
        await db.commit()
        return item.id
