"""The quiz's own rules, against real services (SQLite, in-process state) without the message path."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from bot.channel.menus import get_menu
from bot.learning.quiz import (
    MCQ,
    TRUE_FALSE,
    Quiz,
    parse_answer,
    redact_tool_arguments,
    render_quiz,
    render_verdict,
)
from bot.services import Services
from bot.storage.models import Conversation
from tests.support.pedagogy import START, context, make_student
from tools import interactive_quiz, true_false_quiz
from tools.registry import modes_for

MCQ_ARGS = {
    "question": "Combien font 3 × 5 ?",
    "options": ["12", "15", "18", "20"],
    "correct_index": 1,
    "explanation": "EXPLICATION-SECRETE : 3 fois 5 font quinze.",
    "subject": "Maths",
    "topic": "multiplication",
}


def quiz(kind: str = MCQ, options: tuple[str, ...] = ("12", "15", "18", "20"), correct: int = 1) -> Quiz:
    return Quiz("q1", kind, 1, 1, "Q ?", options, correct, "Parce que.", "Maths", "", START, START)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("2", 1), ("2.", 1), (" 2 ", 1), ("2)", 1), ("2️⃣", 1), ("2\u20e3", 1), ("(2)", 1),
        ("b", 1), ("B", 1), ("b)", 1), ("15", 1), (" 15. ", 1),
        ("1", 0), ("4", 3), ("d", 3),
        ("5", None), ("e", None), ("0", None), ("je sais pas", None), ("2 ou 3 ?", None), ("", None),
    ],
)
def test_mcq_answer_forms(reply: str, expected: int | None) -> None:
    assert parse_answer(quiz(), reply) == expected


def test_option_text_matches_without_case_or_accents() -> None:
    q = quiz(options=("La Côte d'Ivoire", "Le Ghana"), correct=0)
    assert parse_answer(q, "la cote d'ivoire") == 0
    assert parse_answer(q, "c") is None  # only two options


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("1", 0), ("2", 1), ("vrai", 0), ("Vrai", 0), ("VRAI !", 0), ("v", 0), ("true", 0), ("faux", 1),
     ("f", 1), ("False", 1), ("3", None), ("peut-être", None), ("a", None)],
)
def test_true_false_answer_forms(reply: str, expected: int | None) -> None:
    assert parse_answer(quiz(TRUE_FALSE, ("true", "false"), 0), reply) == expected


def test_rendering_per_channel_and_language() -> None:
    q = quiz()
    whatsapp = render_quiz(q, "whatsapp", "fr")
    assert "1️⃣ 12\n2️⃣ 15\n3️⃣ 18\n4️⃣ 20" in whatsapp
    assert whatsapp.splitlines()[-1].startswith("Réponse : le numéro du choix")
    sms = render_quiz(q, "sms", "fr")
    assert "1) 12\n2) 15\n3) 18\n4) 20" in sms and "️⃣" not in sms
    tf = quiz(TRUE_FALSE, ("true", "false"), 0)
    assert "1 Vrai / 2 Faux" in render_quiz(tf, "sms", "fr")
    assert "1 True / 2 False" in render_quiz(tf, "sms", "en")
    assert "1️⃣ Vrai / 2️⃣ Faux" in render_quiz(tf, "whatsapp", "fr")
    for text in (whatsapp, sms, render_quiz(tf, "sms", "fr")):
        assert "Parce que" not in text  # the explanation only comes with the verdict


def test_verdicts() -> None:
    assert render_verdict(quiz(), 1, "fr").startswith("✅")
    wrong = render_verdict(quiz(), 2, "fr")
    assert wrong.startswith("❌") and "2) 15" in wrong and "Parce que." in wrong
    assert "Vrai" in render_verdict(quiz(TRUE_FALSE, ("true", "false"), 0), 1, "fr")
    assert render_verdict(quiz(), 1, "fr", "sms").startswith("Bravo")
    assert render_verdict(quiz(), 0, "en", "sms").startswith("Not quite")


def test_redacted_arguments_keep_the_question_only() -> None:
    redacted = json.loads(redact_tool_arguments("interactive_quiz", json.dumps(MCQ_ARGS)))
    assert "correct_index" not in redacted and "explanation" not in redacted
    assert redacted["question"] == MCQ_ARGS["question"]
    tf = json.loads(redact_tool_arguments("true_false_quiz", json.dumps(
        {"statement": "S", "correct": True, "explanation": "E"})))
    assert tf == {"statement": "S"}
    assert redact_tool_arguments("web_search", '{"query": "x"}') == '{"query": "x"}'
    assert redact_tool_arguments("interactive_quiz", "not json") == "{}"


def test_offered_in_child_and_pro_only() -> None:
    for tool in (interactive_quiz.TOOL, true_false_quiz.TOOL):
        assert tool.modes == modes_for(tool.name) == frozenset({"child", "pro"})
    required = interactive_quiz.TOOL.parameters["required"]
    assert required == ["question", "options", "correct_index", "explanation"]


async def test_quiz_is_stored_sent_and_sanitised(unit_services: Services) -> None:
    user, conversation = await make_student(unit_services)
    sent: list[str] = []
    ctx = context(unit_services, user.id, conversation.id, sent)
    result = await interactive_quiz.run(ctx, dict(MCQ_ARGS))
    assert result["success"] is True
    assert "correct_index" not in json.dumps(result) and "EXPLICATION" not in json.dumps(result)
    assert len(sent) == 1 and "2️⃣ 15" in sent[0] and "EXPLICATION" not in sent[0]
    menu = await get_menu(unit_services, conversation.id)
    assert menu is not None and menu["kind"] == "quiz" and menu["correct_index"] == 1
    assert menu["user_id"] == user.id and menu["subject"] == "Mathématiques"


async def test_first_message_and_three_per_conversation(unit_services: Services) -> None:
    user, first = await make_student(unit_services, user_messages=1)
    sent: list[str] = []
    refused = await interactive_quiz.run(context(unit_services, user.id, first.id, sent), dict(MCQ_ARGS))
    assert refused["success"] is False and "first message" in refused["error"]
    assert sent == [] and await get_menu(unit_services, first.id) is None

    other, conversation = await make_student(unit_services, "+2250705060708")
    ctx = context(unit_services, other.id, conversation.id, sent)
    for _ in range(3):
        assert (await interactive_quiz.run(ctx, dict(MCQ_ARGS)))["success"] is True
    fourth = await true_false_quiz.run(ctx, {"statement": "S", "correct": True, "explanation": "E"})
    assert fourth["success"] is False and "3 quizzes" in fourth["error"]
    assert len(sent) == 3
    async with unit_services.sessions() as db:
        assert await db.scalar(select(Conversation.quiz_count).where(Conversation.id == conversation.id)) == 3


async def test_quiz_in_someone_elses_conversation_is_refused(unit_services: Services) -> None:
    _, conversation = await make_student(unit_services)
    intruder, _ = await make_student(unit_services, "+2250709090909")
    sent: list[str] = []
    ctx = context(unit_services, intruder.id, conversation.id, sent)
    result = await interactive_quiz.run(ctx, dict(MCQ_ARGS))
    assert result["success"] is False and sent == []


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"options": ["seul"]}, "2 to 4"),
        ({"options": ["a", "b", "c", "d", "e"]}, "2 to 4"),
        ({"options": ["a", "A"]}, "same"),
        ({"correct_index": 4}, "between 0 and 3"),
        ({"correct_index": True}, "integer"),
        ({"correct_index": "1"}, "integer"),
        ({"question": "  "}, "question"),
        ({"explanation": None}, "explanation"),
    ],
)
async def test_bad_quiz_arguments_give_clear_errors(unit_services: Services, change: dict[str, Any],
                                                    words: str) -> None:
    user, conversation = await make_student(unit_services)
    sent: list[str] = []
    result = await interactive_quiz.run(context(unit_services, user.id, conversation.id, sent),
                                        {**MCQ_ARGS, **change})
    assert result["success"] is False and words in result["error"]
    assert sent == []
    async with unit_services.sessions() as db:  # a refused quiz does not use one of the three
        assert await db.scalar(select(Conversation.quiz_count).where(Conversation.id == conversation.id)) == 0


async def test_true_false_needs_a_boolean(unit_services: Services) -> None:
    user, conversation = await make_student(unit_services)
    sent: list[str] = []
    ctx = context(unit_services, user.id, conversation.id, sent, channel="sms", language="en")
    bad = await true_false_quiz.run(ctx, {"statement": "S", "correct": "yes", "explanation": "E"})
    assert bad["success"] is False and "boolean" in bad["error"]
    good = await true_false_quiz.run(ctx, {"statement": "Water boils at 100 °C.", "correct": True,
                                           "explanation": "At sea level."})
    assert good["success"] is True and good["statement"] == "Water boils at 100 °C."
    assert "1 True / 2 False" in sent[0] and "sea level" not in sent[0]
