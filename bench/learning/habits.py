"""When simulated students write, by habit, and when a message finds them free to act on it.

A habit is the local hours a student starts a visit (a question, then the tutor's new quizzes), on
the days of the week they study; each day and each of its windows, a visit with the student's own
chance of coming (`Truth.active`, as in bench.learning.run). A drop-out keeps the evening habit for
`stops_after` days, then writes nothing by themselves: only a message from the bot can bring them back.

Free: a message read within an hour of a window the student studies in (that weekday) is read when
they could act on it; at any other hour (in class, at work at home, asleep) they act on it only
`busy` times as often (Reach.busy). This is an assumption of the bench, not a measurement.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from bench.learning.policies import START

EVERY_DAY = tuple(range(7))
WEEKEND = (5, 6)  # START is a Monday: day 5 of the month is a Saturday
VISIT_MINUTES = (10, 20)  # the tutor's new quizzes, answered this long after the visit's first message


@dataclass(frozen=True)
class Habit:
    name: str
    windows: tuple[tuple[float, float], ...]  # local hours a visit starts within, on a day it studies
    weekdays: tuple[int, ...] = EVERY_DAY
    stops_after: int | None = None  # day of the month from which the student stops coming by themselves


HABITS = (
    Habit("evening", ((18.5, 20.5),)),
    Habit("morning+evening", ((6.0, 7.5), (18.5, 20.5))),
    Habit("weekends only", ((10.0, 17.0),), WEEKEND),
    Habit("drop-out after a week", ((18.5, 20.5),), stops_after=7),
)


@dataclass(frozen=True)
class Visit:
    at: datetime
    after_stop: bool  # a visit the student would make had they not dropped out


def visits(habit: Habit, days: int, active: float, rng: random.Random) -> list[Visit]:
    """The visits the student would make, in order; the same under every policy."""
    found: list[Visit] = []
    for day in range(days):
        start = START + timedelta(days=day)
        if start.weekday() not in habit.weekdays:
            continue
        for low, high in habit.windows:
            if rng.random() < active:
                at = start + timedelta(hours=rng.uniform(low, high))
                stopped = habit.stops_after is not None and day >= habit.stops_after
                found.append(Visit(at=at.replace(second=0, microsecond=0), after_stop=stopped))
    return found


def free(habit: Habit, at: datetime) -> bool:
    """The student could act on a message read at `at` (within an hour of a study window)."""
    hour = at.hour + at.minute / 60
    return at.weekday() in habit.weekdays and any(low - 1 <= hour < high + 1 for low, high in habit.windows)
