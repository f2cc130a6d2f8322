"""The learner block of a student's prompt: class, skills mastered and to work on, items due; after
the cached stable prefix, and at most 500 bytes whatever the student's history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bench.cost.measure import LANGUAGES, current_prompt, learner_blocks, sizes
from bot.agent.prompts import PERSONAL_HEADING, build_system_prompt, stable_prefix
from bot.learning import LearnerView, SkillView, learner_block
from bot.learning.profile import BLOCK_MAX_BYTES, LEARNER_HEADING
from tests.support.learner import add_item, add_mastery
from tests.support.pedagogy import STUDENT, say

NOW = datetime(2026, 3, 5, 10, 0, tzinfo=UTC)


def _skill(label: str, p: float, answers: int = 5, status: str = "learning") -> SkillView:
    return SkillView(subject="Mathématiques", skill=label.lower(), label=label, p_known=p, answers=answers,
                     correct=answers // 2, status=status)


def test_the_block_names_level_skills_and_items_due() -> None:
    view = LearnerView(level="4e", due=2, skills=(
        _skill("les fractions", 0.97, 8, "mastered"), _skill("multiplication", 0.7),
        _skill("géométrie", 0.2, 4, "review"), _skill("division", 0.45, 1, "review"),
    ))
    block = learner_block(view)
    assert block.splitlines() == [
        LEARNER_HEADING,
        "- Classe : 4e (adapte-toi à ce niveau)",
        "- À travailler : géométrie (20 %), division (45 %), multiplication (70 %)",
        "- Acquis : les fractions",
        "- À revoir (REVISION) : 2 questions",
    ]
    assert learner_block(LearnerView(level=None, skills=(), due=0)) == ""


def test_the_worst_case_block_stays_within_500_bytes() -> None:
    long = "é" * 200  # two bytes a character, at the label column's length
    skills = tuple(_skill(f"{long}{n}", n / 100, 10, "mastered" if n > 95 else "review") for n in range(100))
    block = learner_block(LearnerView(level="Ü" * 64, skills=skills, due=10**9))
    assert len(block.encode()) <= BLOCK_MAX_BYTES, len(block.encode())
    lines = block.splitlines()
    assert lines[0] == LEARNER_HEADING and lines[-1] == "- À revoir (REVISION) : 1000000000 questions"
    assert any(line.startswith("- À travailler : ") for line in lines)
    assert any(line.startswith("- Acquis : ") for line in lines)


def test_the_fixed_prompt_of_a_students_call_stays_within_9000_bytes() -> None:
    """As `python -m bench.cost` counts it; the learner block comes on top, after the cached prefix."""
    for language in LANGUAGES:
        assert sizes(current_prompt("child", language))["total"] <= 9000
    for block in learner_blocks().values():
        assert 0 < len(block.encode()) <= BLOCK_MAX_BYTES and block.startswith(LEARNER_HEADING)


def test_the_block_comes_after_the_stable_prefix() -> None:
    user = type("U", (), {"display_name": "Awa", "school_level": "4e", "role": "student", "timezone": None})()
    block = learner_block(LearnerView(level="4e", skills=(_skill("fractions", 0.3, 2, "review"),), due=1))
    system = build_system_prompt("child", user=user, learner=block, now=NOW)
    head = stable_prefix("child") + "\n\n" + PERSONAL_HEADING
    assert system.startswith(head) and block in system[len(head):]
    assert "Classe / niveau" not in system  # told once, in the block


async def test_a_students_prompt_carries_the_block_a_pros_does_not(harness: Any) -> None:
    h = harness
    h.clock.now = NOW
    user = await h.make_user(STUDENT, school_level="CM2", display_name="Awa")
    at = NOW - timedelta(days=1)
    await add_mastery(h.services, user.id, "Mathématiques", "les fractions", 0.98, 9, 9, at)
    await add_mastery(h.services, user.id, "maths", "géométrie", 0.25, 3, 1, at)  # an old alias, merged
    for _ in range(3):
        await add_item(h.services, user.id, NOW - timedelta(hours=2))
    h.llm.push_text("Bonjour Awa !")
    await say(h, STUDENT, "Bonjour")
    system = h.llm.requests[-1]["messages"][0]["content"]
    if isinstance(system, list):  # cache_control parts: the stable prefix, then the rest
        system = "".join(part["text"] for part in system)
    head = stable_prefix("child") + "\n\n" + PERSONAL_HEADING
    assert system.startswith(head)
    personal = system[len(head):]
    assert LEARNER_HEADING in personal and "- Classe : CM2" in personal
    assert "- À travailler : géométrie (25 %)" in personal and "- Acquis : les fractions" in personal
    assert "- À revoir (REVISION) : 3 questions" in personal
    pro = "+2250700000005"
    await h.make_user(pro, mode="pro", school_level="CM2")
    h.llm.push_text("Bonjour.")
    await say(h, pro, "Bonjour")
    assert LEARNER_HEADING not in str(h.llm.requests[-1]["messages"][0]["content"])
