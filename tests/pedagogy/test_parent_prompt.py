"""Parents spoken to as parents: the parent's prompt (their children's class, skills to work on,
what is due, the week), the parent's tools (no quiz, no credit award, the pro's e-mail draft), no
welcome again after OUI, and « vous » to parents and pros, « tu » to students."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from bench.cost.measure import LANGUAGES, current_prompt, family_blocks, parent_prompt, sizes
from bot.agent.prompts import PERSONAL_HEADING, stable_prefix
from bot.learning import FAMILY_HEADING, FAMILY_MAX_BYTES
from bot.storage.models import ExerciseResult, Task
from tests.support.learner import add_item, add_mastery
from tests.support.pedagogy import MONDAY, PARENT, STUDENT, confirm, say

QUIZ_AND_AWARD = {"interactive_quiz", "true_false_quiz", "award_bonus_credits"}
PRO = "+2250700000005"


def _system(request: dict[str, Any]) -> str:
    system = request["messages"][0]["content"]
    if isinstance(system, list):  # cache_control parts: the stable prefix, then the rest
        system = "".join(part["text"] for part in system)
    return str(system)


async def _linked(h: Any) -> None:
    """Awa (CM2), with a weak skill, an item due, a task and a week of answers; her parent, who never
    wrote before, confirms with OUI."""
    h.clock.now = MONDAY
    awa = await h.make_user(STUDENT, mode="child", display_name="Awa", school_level="CM2")
    before = MONDAY - timedelta(days=1)
    await add_mastery(h.services, awa.id, "Mathématiques", "géométrie", 0.25, 3, 1, before)
    await add_item(h.services, awa.id, MONDAY - timedelta(hours=2))
    async with h.services.sessions() as db:
        db.add(Task(user_id=awa.id, title="Réciter la table de 7", due_at=MONDAY + timedelta(days=1)))
        two_days_ago = before - timedelta(days=1)
        db.add(ExerciseResult(user_id=awa.id, subject="Maths", correct=True, created_at=two_days_ago))
        await db.commit()
    await say(h, STUDENT, f"PARENT {PARENT}")
    await confirm(h)


async def test_a_parents_model_request_has_the_parent_prompt_and_tools(harness: Any) -> None:
    h = harness
    await _linked(h)
    h.llm.push_text("Voici comment l'aider : demandez-lui de dessiner la figure.")
    await say(h, PARENT, "Quelle est la réponse de l'exercice 3 de ma fille ?", channel="sms")
    request = h.llm.requests[-1]
    system = _system(request)
    assert system.startswith(stable_prefix("parent") + "\n\n" + PERSONAL_HEADING)
    assert "Ne donne JAMAIS au parent la réponse" in system and "Vouvoie" in system
    assert "ne donne JAMAIS directement la réponse d'un devoir" not in system  # not the child's prompt
    family = system[system.index(FAMILY_HEADING):]
    assert "- Awa (CM2) : à travailler géométrie" in family
    assert "7 jours : Maths 1/1" in family and "à faire : 1 tâche, 1 question à revoir" in family
    names = {tool["function"]["name"] for tool in request.get("tools") or []}
    assert names and not names & QUIZ_AND_AWARD, names
    assert {"draft_email", "create_task", "generate_pdf"} <= names
    assert "bash_execute" not in names
    # A student's request still has the quiz tools and the child's prompt.
    h.llm.push_text("Bonjour Awa !")
    await say(h, STUDENT, "Bonjour")
    child = h.llm.requests[-1]
    assert {"interactive_quiz", "award_bonus_credits"} <= {t["function"]["name"] for t in child["tools"]}
    assert FAMILY_HEADING not in _system(child)


async def test_a_parent_after_oui_enfants_aide_is_not_welcomed_as_new(harness: Any) -> None:
    h = harness
    await _linked(h)
    parent = await h.user(PARENT)
    assert parent is not None and parent.onboarding_step is None
    await say(h, PARENT, "ENFANTS", channel="sms")
    await say(h, PARENT, "AIDE", channel="sms")
    h.llm.push_text("Faites-lui refaire l'exemple avec vous.")
    replies = await say(h, PARENT, "Comment l'aider en géométrie ?", channel="sms")
    assert replies == ["Faites-lui refaire l'exemple avec vous."]
    assert not any("Bienvenue" in t or "Welcome" in t for t in await h.texts_to(PARENT))


async def test_a_parent_linked_by_a_class_import_is_not_new(harness: Any) -> None:
    from bot.school import make_parent

    h = harness
    user = await h.make_user(PARENT, mode="guest", role=None, onboarding_step="new")
    async with h.services.sessions() as db:
        user = await db.get(type(user), user.id)
        await make_parent(db, user, 0)
        await db.commit()
    h.llm.push_text("Bien sûr, voici une méthode.")
    replies = await say(h, PARENT, "Comment vérifier ses devoirs de maths ?", channel="sms")
    assert replies == ["Bien sûr, voici une méthode."]


def test_the_family_block_is_small() -> None:
    """Per-user data after the cached prefix: measured as bench.cost measures the learner block."""
    for name, block in family_blocks().items():
        assert block.startswith(FAMILY_HEADING) and 0 < len(block.encode()) <= FAMILY_MAX_BYTES, name
    for language in LANGUAGES:  # a parent's fixed prompt is no larger than a student's
        assert sizes(parent_prompt(language))["total"] <= sizes(current_prompt("child", language))["total"]


# « tu » words for a student, « vous » words for a parent or a pro (whole words; « t' » is « tu »).
TU = re.compile(r"\b(tu|ton|ta|tes|toi|te)\b|\bt'", re.IGNORECASE)
VOUS = re.compile(r"\b(vous|votre|vos)\b", re.IGNORECASE)
WORDS = ("AIDE", "LANGUE", "CREDITS", "MENU", "FUSEAU", "TACHES", "MEMOIRE", "NOUVEAU", "STOP", "START")


async def _replies(h: Any, phone: str, channel: str) -> list[str]:
    texts = []
    for word in WORDS:
        replies = await say(h, phone, word, channel=channel)
        assert replies, word
        texts.extend(replies)
    return texts


@pytest.mark.parametrize("channel", ["sms", "whatsapp"])
async def test_one_register_per_audience(harness: Any, channel: str) -> None:
    h = harness
    await _linked(h)
    await h.make_user(PRO, mode="pro")
    calls = len(h.llm.requests)
    for adult in (PARENT, PRO):
        for text in await _replies(h, adult, channel):
            assert not TU.search(text), (adult, text)
    for text in await _replies(h, STUDENT, channel):
        assert not VOUS.search(text), text
    assert len(h.llm.requests) == calls  # all answered without the model
