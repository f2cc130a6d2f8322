"""The learner's pure parts: subjects and their aliases, skill keys, BKT's update, FSRS's schedule,
and the settings' bounds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.config import ConfigError, load_settings
from bot.config_groups import Learning
from bot.learning import (
    SUBJECTS,
    bkt_update,
    canonical_subject,
    is_mastered,
    known_subject,
    next_review,
    recall_probability,
    skill_key,
)

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(("given", "expected"), [
    ("maths", "Mathématiques"), ("Math", "Mathématiques"), ("MATHEMATIQUES", "Mathématiques"),
    ("Mathématiques", "Mathématiques"), ("francais", "Français"), ("Français", "Français"),
    ("physique-chimie", "Physique-Chimie"), ("Histoire Géo", "Histoire-Géographie"), ("svt", "SVT"),
    ("English", "Anglais"), ("philo", "Philosophie"), ("edhc", "EDHC"),
])
def test_aliases_name_one_canonical_subject(given: str, expected: str) -> None:
    assert canonical_subject(given) == expected


def test_unknown_or_empty_subject_is_other_and_every_canonical_name_is_its_own() -> None:
    assert canonical_subject("cuisine") == "Autre" and canonical_subject("") == "Autre"
    assert known_subject("cuisine") is None
    assert all(canonical_subject(name) == name for name in SUBJECTS)


def test_skill_key_ignores_case_accents_spaces_articles_and_a_plural_s() -> None:
    assert skill_key("Les  Fractions") == skill_key("la fraction") == "fraction"
    assert skill_key("Équations du 1er degré") == skill_key("equation du 1er degre")
    assert skill_key("classe") == "classe" and skill_key("bus") == "bus"  # short words keep their s
    assert skill_key("  ") == ""


def test_bkt_moves_up_on_a_right_answer_and_down_on_a_wrong_one() -> None:
    learning = Learning()
    up = bkt_update(0.2, True, learning)
    # By hand: 0.2·0.9 / (0.2·0.9 + 0.8·0.2) = 0.5294; then + (1 - 0.5294)·0.15
    assert up == pytest.approx(0.5294 + 0.4706 * 0.15, abs=1e-3)
    down = bkt_update(0.6, False, learning)
    assert down < 0.6
    assert down == pytest.approx(0.6 * 0.1 / (0.06 + 0.4 * 0.8) * 0.85 + 0.15, abs=1e-3)


def test_a_run_of_right_answers_reaches_mastery_and_one_miss_leaves_it() -> None:
    learning, p, steps = Learning(), Learning().bkt_p_init, 0
    while not is_mastered(p, learning):
        p, steps = bkt_update(p, True, learning), steps + 1
    assert 3 <= steps <= 6
    assert not is_mastered(bkt_update(p, False, learning), learning)


def test_a_missed_item_comes_back_sooner_than_a_right_one_and_intervals_grow() -> None:
    missed, due_missed = next_review(None, False, NOW)
    right, due_right = next_review(None, True, NOW)
    assert NOW < due_missed <= NOW + timedelta(days=1) < due_right
    again, due_again = next_review(right, True, due_right)
    assert due_again - due_right > due_right - NOW
    assert 0 < recall_probability(right, due_right) < recall_probability(right, NOW + timedelta(hours=1))
    assert recall_probability(None, NOW) == 0.0
    assert missed["stability"] < right["stability"] < again["stability"]


@pytest.mark.parametrize(("name", "value"), [("BKT_P_GUESS", "0.3"), ("BKT_P_SLIP", "0.5"),
                                             ("SESSION_IDLE_S", "10"), ("BKT_MASTERED", "1.2")])
def test_learning_settings_refuse_values_out_of_bounds(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        load_settings({name: value})


def test_learning_settings_are_read() -> None:
    settings = load_settings({"SESSION_IDLE_S": "3600", "NUDGE_AFTER_S": "60", "BKT_P_GUESS": "0.25"})
    assert (settings.learning.session_idle_s, settings.learning.nudge_after_s) == (3600, 60)
    assert settings.learning.bkt_p_guess == 0.25
