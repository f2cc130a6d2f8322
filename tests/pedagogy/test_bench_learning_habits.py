"""`python -m bench.learning --habits` on a few students: every simulated send obeys the bot's rules
(08:00-20:00, the 24 h window, the template's silence and caps), the policies differ where issue 38
says they must, and the table prints a line per habit and policy with the aims under it."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest

from bench.learning.habits import HABITS, Habit
from bench.learning.policies import START
from bench.learning.reach import Outcome, Reach, Run, Setup, month, review_round, visit
from bench.learning.reach_table import COLUMNS, Row, row
from bench.learning.run import Setup as MonthSetup
from bench.learning.run import main, new_student
from bench.learning.sends import NUDGE, POLICIES, TEMPLATE, Contact, Policy, Send, days_of, next_send
from bench.learning.student import Item
from bot.config_groups import Learning
from bot.learning import REVIEW_AHEAD, ROUND_SIZE, WOVEN_MAX
from bot.learning.nudges import WINDOW

SMALL = Setup(students=8, days=21)
TODAY, ISSUE, TEMPLATES = POLICIES
LEARNING = Learning()
EVENING, DROP_OUT = HABITS[0], HABITS[3]


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, str], tuple[Row, list[Outcome]]]:
    return {(habit.name, policy.name): row(SMALL, habit, policy) for habit in HABITS for policy in POLICIES}


def test_every_send_is_in_the_day_and_a_nudge_inside_the_window(
        runs: dict[tuple[str, str], tuple[Row, list[Outcome]]]) -> None:
    sends = [s for _row, months in runs.values() for m in months for s in m.sends]
    assert sends and {s.kind for s in sends} == {NUDGE, TEMPLATE}
    assert all(8 <= s.at.hour < 20 for s in sends)
    for s in sends:
        silent = s.at - s.last_inbound
        if s.kind == NUDGE:
            assert timedelta(seconds=LEARNING.nudge_after_s) <= silent < WINDOW
        else:
            assert silent >= timedelta(seconds=LEARNING.reengage_after_s)


def test_templates_only_under_their_policy_and_within_their_caps(
        runs: dict[tuple[str, str], tuple[Row, list[Outcome]]]) -> None:
    for (_habit, policy), (found, months) in runs.items():
        if policy != TEMPLATES.name:
            assert found.templates == 0 and found.cost == 0
            assert all(s.kind == NUDGE for m in months for s in m.sends)
        for m in months:
            days = [s.at for s in m.sends if s.kind == TEMPLATE]
            assert len({d.date() for d in days}) == len(days)
            weekly = [sum(0 <= (d - e).days < 7 for e in days) for d in days]
            assert all(n <= LEARNING.reengage_max_per_week for n in weekly)
    assert runs[(DROP_OUT.name, TEMPLATES.name)][0].templates > 0


def test_the_evening_student_is_nudged_in_class_today_and_at_their_hour_now(
        runs: dict[tuple[str, str], tuple[Row, list[Outcome]]]) -> None:
    def hours(policy: Policy) -> list[int]:
        return [s.at.hour for m in runs[(EVENING.name, policy.name)][1] for s in m.sends if s.kind == NUDGE]
    today, issue = hours(TODAY), hours(ISSUE)
    assert today.count(8) > len(today) / 2
    assert issue and min(issue) >= 18
    assert runs[(EVENING.name, ISSUE.name)][0].reviews > runs[(EVENING.name, TODAY.name)][0].reviews


def test_re_engagement_brings_back_drop_outs_that_nudges_do_not_reach(
        runs: dict[tuple[str, str], tuple[Row, list[Outcome]]]) -> None:
    templates, issue = (runs[(DROP_OUT.name, p.name)][0].back for p in (TEMPLATES, ISSUE))
    assert templates is not None and issue is not None and templates > issue
    assert runs[(EVENING.name, TODAY.name)][0].back is None


def _contact(*stamps: datetime) -> Contact:
    return Contact(stamps=list(stamps))


def test_a_missed_item_nudged_at_08_today_and_at_the_study_hour_now() -> None:
    evenings = [START + timedelta(days=d, hours=19, minutes=30) for d in range(4)]
    item = Item(skill=0, answers=1, due=days_of(evenings[-1] + timedelta(hours=10)))  # 05:30
    until = evenings[-1] + timedelta(days=3)
    today = next_send(_contact(*evenings), [item], evenings[-1], until, TODAY, LEARNING)
    issue = next_send(_contact(*evenings), [item], evenings[-1], until, ISSUE, LEARNING)
    assert today == (NUDGE, evenings[-1] + timedelta(hours=12, minutes=30))  # 08:00 the next day
    assert issue == (NUDGE, evenings[-1] + timedelta(hours=23, minutes=30))  # 19:00 the next day


def test_past_the_window_only_a_template_after_two_days_at_the_study_hour() -> None:
    last = START + timedelta(hours=19, minutes=30)
    item = Item(skill=0, answers=1, due=days_of(last + timedelta(days=1, hours=1)))  # after the window
    until = last + timedelta(days=10)
    assert next_send(_contact(last), [item], last, until, ISSUE, LEARNING) is None
    found = next_send(_contact(last), [item], last, until, TEMPLATES, LEARNING)
    assert found == (TEMPLATE, last + timedelta(days=2))  # 48 h of silence, past the study hour
    none_a_week = Learning(reengage_max_per_week=0)
    assert next_send(_contact(last), [item], last, until, TEMPLATES, none_a_week) is None


def test_a_template_waits_for_the_study_hour_and_stops_after_three_unanswered() -> None:
    evenings = [START + timedelta(days=d, hours=19, minutes=30) for d in range(4)]
    last = evenings[-1] + timedelta(hours=15)  # 10:30, once
    item = Item(skill=0, answers=1, due=days_of(last))
    contact, until = _contact(*evenings, last), last + timedelta(days=10)
    nudge = (NUDGE, START + timedelta(days=4, hours=19))  # inside the window: the nudge first
    assert next_send(contact, [item], last, until, TEMPLATES, LEARNING) == nudge
    day_after = START + timedelta(days=5)
    assert next_send(contact, [item], day_after, until, TEMPLATES, LEARNING) == (
        TEMPLATE, START + timedelta(days=6, hours=19))
    contact.sent = [Send(TEMPLATE, START + timedelta(days=d, hours=19), last) for d in (6, 7, 14)]
    assert next_send(contact, [item], START + timedelta(days=15), until, TEMPLATES, LEARNING) is None
    contact.sent.pop()
    assert next_send(contact, [item], START + timedelta(days=8), until, TEMPLATES, LEARNING) == (
        TEMPLATE, START + timedelta(days=13, hours=19))  # two in 7 days: the next a week after the first


def test_a_seeded_month_repeats_itself() -> None:
    habit: Habit = HABITS[1]
    assert month(SMALL, habit, 3, ISSUE) == month(SMALL, habit, 3, ISSUE)
    assert month(SMALL, habit, 3, ISSUE) != month(SMALL, habit, 4, ISSUE)


def test_the_table_has_a_line_per_habit_and_policy_and_the_aims(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--habits", "--students", "3", "--days", "14", "--template-price", "20"])
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("habit"))
    assert all(c.format(days=14) in lines[header] for c in COLUMNS)
    body = lines[header + 2:header + 2 + len(HABITS) * len(POLICIES)]
    assert [line.split("  ")[0].strip() for line in body[::len(POLICIES)]] == [h.name for h in HABITS]
    assert all(line.split("  ")[0].strip() != "" for line in body)
    aims = lines[header + 2 + len(body):]
    assert len(aims) == 2 and all(line.startswith(("met: ", "NOT met: ")) for line in aims)
    assert "a template costs 20 XOF" in "\n".join(lines[:header])


def test_a_round_offers_more_under_this_issue_s_policies_only() -> None:
    keen = Setup(reach=Reach(more_take=1.0))
    done = {}
    for policy in (TODAY, ISSUE):
        student, _ = new_student(MonthSetup(skills=2), 0)
        for item in student.items:
            item.answers, item.due = 1, 0.0
        run = Run(habit=EVENING, policy=policy, setup=keen, student=student, rng=random.Random(1),
                  taught=len(student.items))
        review_round(run, START + timedelta(hours=19))
        done[policy.name] = run.reviews
    # Today one round of 5; now the student who takes every offer goes on round after round.
    assert done == {TODAY.name: ROUND_SIZE, ISSUE.name: 2 * MonthSetup.items}


def _due_run(policy: Policy, reach: Reach, due: float) -> Run:
    """An evening student with 6 items answered, all due at `due` (days), and new ones to be asked."""
    student, _ = new_student(MonthSetup(skills=2), 0)
    for item in student.items[:MonthSetup.items]:
        item.answers, item.due = 1, due
    return Run(habit=EVENING, policy=policy, setup=Setup(reach=reach), student=student, rng=random.Random(1),
               taught=MonthSetup.items)


def test_a_question_due_after_each_quiz_verdict_under_this_issue_s_policies_only() -> None:
    # The session's offer and a round's offer of more never taken: only the woven questions remain.
    reach = Reach(offer_take=0.0, more_take=0.0, woven_take=1.0)
    done = {}
    for policy in (TODAY, ISSUE):
        run = _due_run(policy, reach, 0.0)
        visit(run, START + timedelta(hours=19))
        done[policy.name] = run.reviews
    assert done == {TODAY.name: 0, ISSUE.name: WOVEN_MAX}


def test_a_round_takes_the_items_due_within_the_hour_under_this_issue_s_policies_only() -> None:
    at = START + timedelta(hours=19)
    soon = days_of(at + REVIEW_AHEAD - timedelta(minutes=20))
    done = {}
    for policy in (TODAY, ISSUE):
        run = _due_run(policy, Reach(more_take=0.0), soon)
        review_round(run, at)
        done[policy.name] = run.reviews
    assert done == {TODAY.name: 0, ISSUE.name: ROUND_SIZE}
