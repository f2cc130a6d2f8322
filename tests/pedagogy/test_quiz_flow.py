"""Quizzes end to end: Twilio webhook in, scripted model, numbered menu out, answer checked on the server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from sqlalchemy import select

from bot.storage.models import ExerciseResult, PendingMenu, User
from tests.support.pedagogy import MCQ_ARGS, OTHER, SECRET, STUDENT, ask_quiz, say

TF_ARGS = {
    "statement": "L'eau bout à 100 °C au niveau de la mer.",
    "correct": True,
    "explanation": f"{SECRET} : à la pression normale.",
    "subject": "Physique",
}


def is_right(verdict: str) -> bool:
    return "Bravo, bonne réponse" in verdict or "Well done, that's right" in verdict


def is_wrong(verdict: str) -> bool:
    return "Pas tout à fait" in verdict or "Not quite" in verdict


def all_sent_bodies(h: Any) -> str:
    return "\n".join(h.twilio.shown(m) for m in h.twilio.sent)


def assert_secret_kept(h: Any) -> None:
    """Before the answer: neither the explanation nor which option is right has left the server."""
    assert SECRET not in all_sent_bodies(h)
    assert SECRET not in h.llm.all_request_text()
    # The tool schemas name `correct_index`; no message may carry a value for it.
    messages = json.dumps([r["messages"] for r in h.llm.requests], ensure_ascii=False)
    assert "correct_index" not in messages and '\\"correct\\": true' not in messages


async def results(h: Any, phone: str) -> list[ExerciseResult]:
    async with h.services.sessions() as db:
        user = await db.scalar(select(User).where(User.phone == phone))
        return list((await db.scalars(select(ExerciseResult).where(ExerciseResult.user_id == user.id))).all())


async def test_quiz_menu_on_whatsapp_answered_right_without_model_call(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    texts = await ask_quiz(h)
    menu = next(t for t in texts if "Combien font" in t)
    assert "1️⃣ 12\n2️⃣ 15\n3️⃣ 18\n4️⃣ 20" in menu
    assert "Réponse : le numéro du choix" in menu
    assert_secret_kept(h)
    calls = len(h.llm.requests)
    h.clock.advance(seconds=42)
    verdict = await say(h, STUDENT, "2")
    assert len(h.llm.requests) == calls  # the verdict costs no model call
    assert len(verdict) == 1 and verdict[0].startswith("✅") and SECRET in verdict[0]
    [result] = await results(h, STUDENT)
    assert result.correct is True and result.subject == "Mathématiques" and result.topic == "multiplication"
    assert result.source == "quiz" and result.time_to_answer_s == pytest.approx(42, abs=1)
    # The tutor learns the outcome on its next turn.
    await say(h, STUDENT, "Merci !")
    last_request = str(h.llm.requests[-1])
    assert "[Quiz]" in last_request and "correct" in last_request


async def test_quiz_menu_on_sms(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    texts = await ask_quiz(h, channel="sms")
    menu = next(t for t in texts if "Combien font" in t)
    assert "1) 12\n2) 15\n3) 18\n4) 20" in menu
    assert "️⃣" not in menu
    assert_secret_kept(h)
    verdict = await say(h, STUDENT, "3", channel="sms")
    assert is_wrong(verdict[0]) and SECRET in verdict[0] and "2) 15" in verdict[0]


@pytest.mark.parametrize("channel", ["whatsapp", "sms"])
@pytest.mark.parametrize(
    ("reply", "right"),
    [("2", True), ("2.", True), ("2️⃣", True), (" 2 ", True), ("b", True), ("B", True), ("15", True),
     ("1", False), ("4.", False), ("a", False), ("18", False)],
)
async def test_each_answer_form(harness: Any, channel: str, reply: str, right: bool) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h, channel=channel)
    calls = len(h.llm.requests)
    verdict = await say(h, STUDENT, reply, channel)
    assert len(h.llm.requests) == calls
    assert (is_right if right else is_wrong)(verdict[0])
    if channel == "whatsapp":
        assert verdict[0].startswith("✅" if right else "❌")
    [result] = await results(h, STUDENT)
    assert result.correct is right
    # Answered: the same number again is an ordinary message for the tutor.
    await say(h, STUDENT, reply, channel)
    assert len(h.llm.requests) == calls + 1
    assert len(await results(h, STUDENT)) == 1


@pytest.mark.parametrize(
    ("reply", "right", "language"),
    [("vrai", True, "fr"), ("Vrai", True, "fr"), ("v", True, "fr"), ("1", True, "fr"), ("faux", False, "fr"),
     ("f", False, "fr"), ("2", False, "fr"), ("true", True, "en"), ("false", False, "en")],
)
async def test_true_false(harness: Any, reply: str, right: bool, language: str) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child", language=language)
    texts = await ask_quiz(h, channel="sms", tool="true_false_quiz", args=TF_ARGS)
    menu = next(t for t in texts if "100" in t)
    assert ("1 True / 2 False" if language == "en" else "1 Vrai / 2 Faux") in menu
    assert_secret_kept(h)
    verdict = await say(h, STUDENT, reply, "sms")
    assert (is_right if right else is_wrong)(verdict[0]) and SECRET in verdict[0]


async def test_other_text_goes_to_the_tutor_and_the_quiz_stays(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h)
    calls = len(h.llm.requests)
    h.llm.push_text("Un indice : pense à la table de 5.")
    texts = await say(h, STUDENT, "je ne sais pas, un indice ?")
    assert len(h.llm.requests) == calls + 1 and texts == ["Un indice : pense à la table de 5."]
    assert_secret_kept(h)
    verdict = await say(h, STUDENT, "2")
    assert verdict[0].startswith("✅")


async def test_another_number_cannot_answer(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await h.make_user(OTHER, mode="child")
    await ask_quiz(h)
    calls = len(h.llm.requests)
    texts = await say(h, OTHER, "2")
    assert len(h.llm.requests) == calls + 1  # an ordinary message of the other user's conversation
    assert not any(is_right(t) or is_wrong(t) for t in texts)
    assert await results(h, OTHER) == []
    assert (await say(h, STUDENT, "2"))[0].startswith("✅")


async def test_answer_after_expiry_gets_a_hint(make_harness: Any) -> None:
    h = await make_harness(QUIZ_TTL_S="120")
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h)
    h.clock.advance(seconds=121)
    calls = len(h.llm.requests)
    hint = await say(h, STUDENT, "2")
    assert len(h.llm.requests) == calls and "expiré" in hint[0]
    assert SECRET not in "\n".join(hint)
    assert await results(h, STUDENT) == []


async def test_answer_after_the_stored_quiz_is_gone_gets_a_hint(make_harness: Any) -> None:
    """The state's own TTL removed the quiz (not only the clock): a number still gets the hint."""
    h = await make_harness(QUIZ_TTL_S="1")
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h)
    await asyncio.sleep(1.2)
    h.clock.advance(seconds=2)
    calls = len(h.llm.requests)
    hint = await say(h, STUDENT, "2️⃣")
    assert len(h.llm.requests) == calls and "expiré" in hint[0]
    # Words are not taken for a late answer: they go to the tutor.
    await say(h, STUDENT, "on fait autre chose ?")
    assert len(h.llm.requests) == calls + 1


async def test_new_quiz_replaces_the_pending_one(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h)
    second = {**MCQ_ARGS, "question": "Combien font 2 + 2 ?", "options": ["4", "5"], "correct_index": 0}
    texts = await ask_quiz(h, args=second, first=False)
    assert any("1️⃣ 4\n2️⃣ 5" in t for t in texts)
    verdict = await say(h, STUDENT, "1")  # right for the new quiz (it would be wrong for the first)
    assert verdict[0].startswith("✅") and "1) 4" in verdict[0]
    assert len(await results(h, STUDENT)) == 1


async def test_never_on_the_first_message(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    h.llm.push_tool_calls(("interactive_quiz", MCQ_ARGS))
    h.llm.push_text("Commençons par la leçon.")
    texts = await say(h, STUDENT, "Bonjour, aide-moi en maths")
    assert not any("1️⃣" in t for t in texts)
    assert "first message" in str(h.llm.requests[-1])
    # A number now is just a message: there is no quiz.
    calls = len(h.llm.requests)
    await say(h, STUDENT, "2")
    assert len(h.llm.requests) == calls + 1


async def test_at_most_three_quizzes_per_conversation(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h)
    await say(h, STUDENT, "2")
    for _ in range(2):
        await ask_quiz(h, first=False)
        await say(h, STUDENT, "2")
    texts = await ask_quiz(h, first=False)
    assert not any("1️⃣" in t for t in texts)
    assert "3 quizzes" in str(h.llm.requests[-1])
    assert len(await results(h, STUDENT)) == 3


async def test_a_pending_quiz_survives_the_loss_of_the_shared_state(harness: Any) -> None:
    """Redis restarted (or the process with the in-process state): the quiz's « 2 » is still the
    answer, checked on the server, because the pending menu is in the database too."""
    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h)
    async with h.services.sessions() as db:
        conversation = await db.scalar(select(PendingMenu.conversation_id))
    await h.services.state.kv_delete(f"menu:{conversation}")
    await h.services.state.kv_delete(f"menu-expired:{conversation}")
    calls = len(h.llm.requests)
    verdict = await say(h, STUDENT, "2")
    assert len(h.llm.requests) == calls and verdict[0].startswith("✅")
    [result] = await results(h, STUDENT)
    assert result.correct is True
    async with h.services.sessions() as db:
        assert await db.scalar(select(PendingMenu.conversation_id)) is None  # answered: gone
