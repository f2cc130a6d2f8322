"""Reviews the nudges actually bring, hour by hour, for students of four message habits.

    .venv/bin/python -m bench.learning --habits [--students 200] [--days 30] [--seed 23]
        [--offer-take 0.5] [--nudge-take 0.5] [--template-take 0.25] [--busy 0.2] [--resume 0.5]
        [--more-take 0.5] [--woven-take 1] [--template-price P]

Each student (bench.learning.habits: evening, morning+evening, weekends only, a drop-out after a
week) writes at the hours of their habit. A visit: the student's question, then 2 new quizzes (the
student has enough items for 2 at every visit of the month); on a session's first message with
items due, the offer of a round (handlers/session_start.py, there before and after this issue),
taken with `--offer-take`. Under this issue's policies a question due comes right after a quiz's
verdict, at most WOVEN_MAX a visit (handlers/review.py's `weave`), answered with `--woven-take`
(1: as the visit's quizzes are, the student being there answering questions), a round's score
offers the next round while items are due (handlers/review.py), taken with `--more-take`, and a
round takes the items due within REVIEW_AHEAD (bot.learning.rounds). Between visits the bot sends
what the policy's rules allow (bench.learning.sends: WhatsApp's 24 h window, 08:00-20:00 local, the
study hour, the template's caps); a nudge or template read when the student is free is acted on
(a round of at most ROUND_SIZE due items) with `--nudge-take` / `--template-take`, at other hours
`--busy` times as often. A drop-out who acts on one comes back: from then on they keep their habit
with `--resume`, else that round is all. Every take-rate is assumed, not measured. The table and
the aims: bench.learning.reach_table.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from fsrs import Card

from bench.learning.habits import VISIT_MINUTES, Habit, free, visits
from bench.learning.policies import START, due_now
from bench.learning.run import Setup as MonthSetup
from bench.learning.run import new_student
from bench.learning.sends import (
    NUDGE,
    TZ,
    Contact,
    Policy,
    Send,
    days_of,
    next_send,
)
from bench.learning.student import Item, Memory, Student, probe_right
from bench.learning.student import answer as student_answer
from bot.config_groups import Learning
from bot.learning import REVIEW_AHEAD, ROUND_SIZE, WOVEN_MAX, StudyTime, next_review, send_hour

NEW_CARD: dict[str, Any] = dict(Card(card_id=1).to_dict())


@dataclass(frozen=True)
class Reach:
    """The assumed behaviour of students towards the bot's messages (all rates 0..1)."""

    offer_take: float = 0.5  # a session's review offer taken
    nudge_take: float = 0.5  # a nudge acted on, read at a free hour
    template_take: float = 0.25  # a template acted on, read at a free hour
    busy: float = 0.2  # at another hour, the take-rate times this
    resume: float = 0.5  # a drop-out brought back keeps their habit again
    more_take: float = 0.5  # the offer of more at a round's end taken
    woven_take: float = 1.0  # a question due asked after a quiz's verdict answered, as the quizzes are


@dataclass(frozen=True)
class Setup:
    students: int = 200
    days: int = 30
    seed: int = 23
    new: int = 2
    reach: Reach = field(default_factory=Reach)
    memory: Memory = field(default_factory=Memory)
    learning: Learning = field(default_factory=Learning)
    template_price: float = 0.0
    currency: str = "XOF"


@dataclass
class Run:
    """One student's month under one policy, as it goes."""

    habit: Habit
    policy: Policy
    setup: Setup
    student: Student
    rng: random.Random  # the student's reactions to the bot's messages
    contact: Contact = field(default_factory=Contact)
    taught: int = 0
    reviews: int = 0
    back: bool = False  # a drop-out wrote again after dropping out
    resumed: bool = False

    def study(self, now: datetime) -> StudyTime | None:
        return StudyTime(send_hour(self.contact.hour(now)), TZ) if self.policy.study_hours else None


@dataclass(frozen=True)
class Outcome:
    reviews: int
    nudges: int
    templates: int
    right: float
    back: bool
    sends: tuple[Send, ...]


def ask(run: Run, item: Item, now: datetime) -> None:
    correct = student_answer(run.student, item, days_of(now), run.setup.memory)
    run.contact.stamps.append(now)
    item.card, due = next_review(item.card, correct, now, run.study(now))
    item.due = days_of(due)


def due(run: Run, now: datetime, budget: int) -> list[Item]:
    """What a round the student starts asks, or an offer counts: the items due now, and under this
    issue's policies those due within REVIEW_AHEAD (bot.learning.rounds)."""
    ahead = REVIEW_AHEAD if run.policy.session_offers else timedelta(0)
    return due_now(run.student.items[:run.taught], days_of(now + ahead), budget)


def review_round(run: Run, now: datetime, size: int = ROUND_SIZE) -> datetime:
    """A round of the items due (at most `size`), one answer a minute, and the next ones the student
    takes when its end offers more (this issue's policies: handlers/review.py); returns when they end."""
    while True:
        run.contact.stamps.append(now)
        for item in due(run, now, size):
            now += timedelta(minutes=1)
            ask(run, item, now)
            run.reviews += 1
        size = ROUND_SIZE
        more = run.policy.more and due(run, now, 1)
        if not more or run.rng.random() >= run.setup.reach.more_take:
            return now
        now += timedelta(minutes=1)


def visit(run: Run, at: datetime) -> datetime:
    """The student's own visit: their question, the offer on a session's first message, new quizzes;
    under this issue's policies a question due after each quiz's verdict, WOVEN_MAX a visit
    (handlers/review.py's `weave`: a conversation's, and no two visits share one)."""
    last = run.contact.last_inbound
    first = last is None or at - last >= timedelta(seconds=run.setup.learning.session_idle_s)
    run.contact.stamps.append(at)
    end = at
    if first and due(run, at, 1) and run.rng.random() < run.setup.reach.offer_take:
        end = review_round(run, at + timedelta(minutes=2))
    new = run.student.items[run.taught:run.taught + run.setup.new]
    woven = 0 if run.policy.session_offers else WOVEN_MAX
    for item, minutes in zip(new, VISIT_MINUTES, strict=False):
        end = max(end, at + timedelta(minutes=minutes))
        ask(run, item, end)
        if woven < WOVEN_MAX and due(run, end, 1):
            woven += 1
            if run.rng.random() < run.setup.reach.woven_take:  # a round of one, then its offer of more
                end = review_round(run, end + timedelta(minutes=1), size=1)
    run.taught += len(new)
    return end


def message(run: Run, kind: str, at: datetime) -> datetime:
    """The bot sends a nudge or a template at `at`; the student may act on it at once."""
    last = run.contact.last_inbound
    assert last is not None  # neither goes to a student who never wrote
    run.contact.sent.append(Send(kind=kind, at=at, last_inbound=last))
    reach = run.setup.reach
    take = reach.nudge_take if kind == NUDGE else reach.template_take
    if not free(run.habit, at):
        take *= reach.busy
    if run.rng.random() >= take:
        return at
    if run.habit.stops_after is not None and days_of(at) >= run.habit.stops_after and not run.back:
        run.back, run.resumed = True, run.rng.random() < reach.resume
    return review_round(run, at + timedelta(minutes=5))


def month(setup: Setup, habit: Habit, index: int, policy: Policy) -> Outcome:
    """One student's month; the same student and the same visits under every policy."""
    key = f"{setup.seed}:{habit.name}:{index}"
    skills = -(-setup.days * len(habit.windows) * setup.new // MonthSetup.items)  # never short of new quizzes
    student, _ = new_student(MonthSetup(seed=hash_seed(key), skills=skills, memory=setup.memory,
                                        learning=setup.learning), 0)
    own = visits(habit, setup.days, student.truth.active, random.Random(f"{key}:visits"))
    fresh_cards(student.items)
    run = Run(habit=habit, policy=policy, setup=setup, student=student, rng=random.Random(f"{key}:reach"))
    now, end = START, START + timedelta(days=setup.days)
    for planned in [*own, None]:
        until = end if planned is None else planned.at
        while (send := next_send(run.contact, student.items[:run.taught], now, until, policy,
                                 setup.learning)) is not None:
            now = message(run, send[0], send[1]) + timedelta(seconds=1)
        if planned is not None and (not planned.after_stop or run.resumed):
            now = visit(run, max(planned.at, now)) + timedelta(seconds=1)
    probe = days_of(end) + 19 / 24
    items = student.items[:run.taught]
    right = sum(probe_right(student, item, probe, setup.memory) for item in items) / max(len(items), 1)
    sends = tuple(run.contact.sent)
    return Outcome(reviews=run.reviews, nudges=sum(s.kind == NUDGE for s in sends),
                   templates=len(sends) - sum(s.kind == NUDGE for s in sends), right=right,
                   back=run.back, sends=sends)


def fresh_cards(items: list[Item]) -> None:
    """A new FSRS card on each item, as `next_review(None, ...)` makes one, but with a fixed id:
    fsrs waits a millisecond after each card it numbers by the clock."""
    for item in items:
        item.card = NEW_CARD


def hash_seed(key: str) -> int:
    return random.Random(key).randrange(2**31)
