"""Learning over a month under three review policies, on simulated students.

    .venv/bin/python -m bench.learning [--students 300] [--days 30] [--skills 4] [--items 6] [--seed 23]
        [--new 2] [--budget 5] [--first-stability 2] [--growth 3] [--lapse 0.5] [--transfer 0.5]

Each student has `--skills` skills of `--items` quiz items each, taught in order, skill after skill.
On a day the student comes (each draws how often), a session: the tutor asks `--new` new items (as
it asks quizzes), then a review round asks the items the policy has due, at most `--budget` of them
(REVISION's cap), the longest overdue first. The bot's BKT (its settings' defaults) follows every
answer, as the bot does. On day `--days` a probe asks every item taught, without changing anything.

Columns: questions and reviews asked per student over the month; right at dN: the share of the taught
items a probe would answer right (its expectation, guesses and slips included); held at dN: the same
without guesses (the student produces the answer); mastered: the share of skills the bot's BKT calls
mastered (`is_mastered`), then the share of those the student truly knows, and the share of skills
truly known. The student model (bench/learning/student.py) is assumed, not measured: see the README.
The same seed gives the same table; the students' days and parameters are the same under every policy.

    .venv/bin/python -m bench.learning --habits [--help]

prints the other table instead: reviews actually done, hour by hour, by students who write in the
evening, morning and evening, on weekends only, or drop out after a week, under WhatsApp's 24 h window
and 08:00-20:00, with today's nudges, this issue's and the review template (bench.learning.reach).
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass, field

from bench.learning.policies import POLICIES, Schedule, due_now
from bench.learning.student import Item, Memory, Student, draw_truth, held_chance, probe_right
from bench.learning.student import answer as student_answer
from bot.config_groups import Learning
from bot.learning import bkt_update, is_mastered

SESSION_HOUR = 17 / 24  # sessions after school; every schedule here is in whole days from one
COLUMNS = ("policy", "questions", "reviews", "right at d{days}", "held at d{days}", "mastered (BKT)",
           "of them known", "known (truth)")


@dataclass(frozen=True)
class Setup:
    students: int = 300
    days: int = 30
    skills: int = 4
    items: int = 6
    new: int = 2
    budget: int = 5
    seed: int = 23
    memory: Memory = field(default_factory=Memory)
    learning: Learning = field(default_factory=Learning)


@dataclass(frozen=True)
class Outcome:
    """One student's month under one policy."""

    questions: int
    reviews: int
    right: float
    held: float
    mastered: int
    mastered_known: int
    known: int


def new_student(setup: Setup, index: int) -> tuple[Student, list[int]]:
    """The student's hidden state and the days they come; both the same under every policy."""
    truth_rng = random.Random(f"{setup.seed}:truth:{index}")
    truth = draw_truth(truth_rng)
    known = [truth_rng.random() < truth.p_init for _ in range(setup.skills)]
    days = [day for day in range(setup.days) if truth_rng.random() < truth.active]
    items = [Item(skill=skill) for skill in range(setup.skills) for _ in range(setup.items)]
    student = Student(truth=truth, known=known, items=items,
                      rng=random.Random(f"{setup.seed}:answers:{index}"),
                      p_known=[setup.learning.bkt_p_init] * setup.skills)
    return student, days


def ask(student: Student, item: Item, now: float, schedule: Schedule, setup: Setup) -> None:
    correct = student_answer(student, item, now, setup.memory)
    student.p_known[item.skill] = bkt_update(student.p_known[item.skill], correct, setup.learning)
    item.due = schedule(item, correct, now)


def month(setup: Setup, index: int, schedule: Schedule) -> Outcome:
    student, days = new_student(setup, index)
    taught = 0
    for day in days:
        now = day + SESSION_HOUR
        for item in student.items[taught:taught + setup.new]:
            ask(student, item, now, schedule, setup)
        taught = min(taught + setup.new, len(student.items))
        for item in due_now(student.items[:taught], now, setup.budget):
            ask(student, item, now, schedule, setup)
    return outcome(student, taught, setup)


def outcome(student: Student, taught: int, setup: Setup) -> Outcome:
    probe, items = setup.days + SESSION_HOUR, student.items[:taught]
    mastered = [is_mastered(p, setup.learning) for p in student.p_known]
    return Outcome(
        questions=sum(item.answers for item in items),
        reviews=sum(max(item.answers - 1, 0) for item in items),
        right=mean([probe_right(student, item, probe, setup.memory) for item in items]),
        held=mean([held_chance(student, item, probe, setup.memory) for item in items]),
        mastered=sum(mastered),
        mastered_known=sum(m and k for m, k in zip(mastered, student.known, strict=True)),
        known=sum(student.known),
    )


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


@dataclass(frozen=True)
class Row:
    """One policy's line of the table: means per student, shares of items or skills (0..1)."""

    policy: str
    questions: float
    reviews: float
    right: float
    held: float
    mastered: float
    mastered_known: float | None  # None when no skill was called mastered
    known: float

    def cells(self) -> tuple[str, ...]:
        of_them = "-" if self.mastered_known is None else f"{self.mastered_known:.0%}"
        return (self.policy, f"{self.questions:.1f}", f"{self.reviews:.1f}", f"{self.right:.1%}",
                f"{self.held:.1%}", f"{self.mastered:.1%}", of_them, f"{self.known:.1%}")


def rows(setup: Setup) -> list[Row]:
    """One row per policy, in the order of POLICIES."""
    return [summary(name, [month(setup, index, schedule) for index in range(setup.students)], setup)
            for name, schedule in POLICIES.items()]


def summary(name: str, months: list[Outcome], setup: Setup) -> Row:
    n, skills = len(months), len(months) * setup.skills
    mastered = sum(m.mastered for m in months)
    return Row(
        policy=name, questions=sum(m.questions for m in months) / n,
        reviews=sum(m.reviews for m in months) / n, right=sum(m.right for m in months) / n,
        held=sum(m.held for m in months) / n, mastered=mastered / skills,
        mastered_known=sum(m.mastered_known for m in months) / mastered if mastered else None,
        known=sum(m.known for m in months) / skills,
    )


def table(setup: Setup, policies: list[Row]) -> str:
    lines = [r.cells() for r in policies]
    columns = [c.format(days=setup.days) for c in COLUMNS]
    widths = [max(len(c), *(len(r[i]) for r in lines)) for i, c in enumerate(columns)]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    head = [fmt.format(*columns), fmt.format(*("-" * w for w in widths))]
    return "\n".join(head + [fmt.format(*r) for r in lines])


def parse(argv: list[str] | None = None) -> Setup:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = Setup()
    for name in ("students", "days", "skills", "items", "new", "budget", "seed"):
        parser.add_argument(f"--{name}", type=int, default=getattr(defaults, name))
    for name in ("first_stability", "growth", "lapse", "transfer"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=float, default=getattr(defaults.memory, name),
                            help="the assumed memory model (bench/learning/student.py)")
    args = vars(parser.parse_args(argv))
    memory = Memory(**{name: args.pop(name) for name in ("first_stability", "growth", "lapse", "transfer")})
    return Setup(memory=memory, **args)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if "--habits" in args:  # the other table: bench.learning.reach
        from bench.learning.reach_table import main as habits
        return habits([a for a in args if a != "--habits"])
    setup = parse(args)
    m = setup.memory
    print(f"{setup.students} simulated students, {setup.days} days, {setup.skills} skills x {setup.items} "
          f"items each, {setup.new} new items a session, at most {setup.budget} reviews a round, seed "
          f"{setup.seed}")
    print(f"assumed memory: first stability {m.first_stability:g} d, x (1 + {m.growth:g} (1 - r)) on a "
          f"recall, x {m.lapse:g} on a miss; {m.transfer:.0%} of forgotten items worked out from a known "
          "skill")
    print(table(setup, rows(setup)))
