"""The simulated student: the ground truth the bench grades the review policies against.

Acquisition is Bayesian Knowledge Tracing's own story, per skill: a skill is known from the start
with P(init); every answer on one of its items (the correction is shown after each) is a practice
from which a student who does not know it learns it with P(learn); known stays known.

Retention is per item, and deliberately not FSRS's model (the scheduler must not be graded by its
own formulas): once an item has been answered, the student holds its memory with an exponential
trace, r = exp(-days since the last answer / S). The stability S starts at `first_stability` days;
each answer the student produced from memory (or worked out, below) multiplies it by
1 + growth × (1 − r), so a recall that was nearly lost strengthens more than one made the next
morning (the spacing effect) and an answer given while r is still ~1 adds almost nothing; an
answer the student could not produce halves it (never below `first_stability`) after the
correction is read again.

An answer: the student retrieves the item with probability r; if not, a student who knows the skill
works it out with probability `transfer` (the understanding carries part of the items, not all);
then the answer is right with 1 − slip when the item was held, else with P(guess) (a multiple
choice). Each student draws their own P(init), P(learn), guess, slip and how often they come, so
the bot's BKT (one set of parameters for everybody) is not told the truth either.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Memory:
    """The assumed memory model, the same for every student."""

    first_stability: float = 2.0  # days: a trace after one answer is at 61 % a day later, 22 % after 3
    growth: float = 3.0
    lapse: float = 0.5
    transfer: float = 0.5


@dataclass(frozen=True)
class Truth:
    """One student's hidden parameters."""

    p_init: float
    p_learn: float
    guess: float
    slip: float
    active: float  # the chance of a session on a given day


@dataclass
class Item:
    """One quiz item of one student: the true memory trace and what the policy keeps of it."""

    skill: int
    answers: int = 0
    stability: float = 0.0
    last: float | None = None  # days since the start of the month, None until first answered
    due: float | None = None  # when the policy asks it again; None = never
    card: dict[str, Any] | None = None  # the FSRS card, for the scheduler that keeps one


@dataclass
class Student:
    truth: Truth
    known: list[bool]
    items: list[Item]
    rng: random.Random
    p_known: list[float] = field(default_factory=list)  # the bot's BKT estimate, per skill


def draw_truth(rng: random.Random) -> Truth:
    return Truth(
        p_init=rng.uniform(0.05, 0.4), p_learn=rng.uniform(0.05, 0.3), guess=rng.uniform(0.15, 0.3),
        slip=rng.uniform(0.03, 0.15), active=rng.uniform(0.5, 0.95),
    )


def retrievability(item: Item, now: float) -> float:
    if item.last is None:
        return 0.0
    return math.exp(-(now - item.last) / item.stability)


def answer(student: Student, item: Item, now: float, memory: Memory) -> bool:
    """The student answers the item now and reads the correction; True when the answer is right."""
    truth, rng = student.truth, student.rng
    r = retrievability(item, now)
    held = rng.random() < r or (student.known[item.skill] and rng.random() < memory.transfer)
    correct = rng.random() < (1 - truth.slip if held else truth.guess)
    if item.last is None:
        item.stability = memory.first_stability
    elif held:
        item.stability *= 1 + memory.growth * (1 - r)
    else:
        item.stability = max(memory.first_stability, item.stability * memory.lapse)
    item.last = now
    item.answers += 1
    if not student.known[item.skill] and rng.random() < truth.p_learn:
        student.known[item.skill] = True
    return correct


def held_chance(student: Student, item: Item, now: float, memory: Memory) -> float:
    """The chance the student produces the item's answer now, without guessing."""
    r = retrievability(item, now)
    return r + (1 - r) * memory.transfer if student.known[item.skill] else r


def probe_right(student: Student, item: Item, now: float, memory: Memory) -> float:
    """The chance a probe on the item is answered right now (guesses and slips included)."""
    held = held_chance(student, item, now, memory)
    return held * (1 - student.truth.slip) + (1 - held) * student.truth.guess
