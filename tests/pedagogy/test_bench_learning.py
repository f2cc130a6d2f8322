"""`python -m bench.learning` on a few students: the table's shape, a seeded run repeats itself, and
reviewing keeps more items than never reviewing (a property of the simulation, measured each run)."""

from __future__ import annotations

import pytest

from bench.learning.policies import POLICIES, fixed_intervals, fsrs
from bench.learning.run import COLUMNS, Row, Setup, main, rows
from bench.learning.student import Item, Memory

SMALL = Setup(students=40)


@pytest.fixture(scope="module")
def small() -> list[Row]:
    return rows(SMALL)


def test_the_table_has_a_line_per_policy_under_the_columns(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--students", "12", "--days", "20"])
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("policy"))
    body = lines[header + 2:]
    assert lines[0].startswith("12 simulated students, 20 days")
    assert [c.format(days=20) in lines[header] for c in COLUMNS] == [True] * len(COLUMNS)
    assert set(lines[header + 1]) == {"-", " "}
    assert [line.split("  ")[0].strip() for line in body] == list(POLICIES)
    assert all(len(line.split()) >= len(COLUMNS) for line in body)


def test_a_seeded_run_gives_the_same_rows_and_another_seed_other_rows(small: list[Row]) -> None:
    assert rows(Setup(students=40)) == small
    assert rows(Setup(students=40, seed=24)) != small


def test_review_policies_recall_more_at_the_end_than_no_review_at_more_questions(small: list[Row]) -> None:
    none, fixed, scheduled = small
    assert none.reviews == 0 and fixed.reviews > 0 and scheduled.reviews > 0
    assert fixed.questions > none.questions and scheduled.questions > none.questions
    for policy in (fixed, scheduled):
        assert policy.right > none.right + 0.1 and policy.held > none.held + 0.1
        assert policy.known >= none.known
    assert all(0 <= share <= 1 for r in small for share in (r.right, r.held, r.mastered, r.known))


def test_the_gain_of_reviews_is_the_memory_they_keep(small: list[Row]) -> None:
    # Stabilities of years: nothing fades within the month, so one answer holds an item as well as
    # any number of reviews, and the gap the forgetting made closes.
    none, fixed, scheduled = rows(Setup(students=40, memory=Memory(first_stability=1e6)))
    assert small[1].held - small[0].held > 0.1
    assert abs(fixed.held - none.held) < 0.01 and abs(scheduled.held - none.held) < 0.01


def test_the_schedules_bring_a_missed_item_back_sooner_than_a_right_one() -> None:
    right, missed = Item(skill=0, answers=1), Item(skill=0, answers=1)
    assert (fsrs(missed, False, 0.7) or 0) < (fsrs(right, True, 0.7) or 0)
    assert fixed_intervals(Item(skill=0, answers=1), True, 0.0) == 1.0
    assert fixed_intervals(Item(skill=0, answers=4), False, 0.0) == 14.0
    assert fixed_intervals(Item(skill=0, answers=9), True, 2.0) == 16.0
