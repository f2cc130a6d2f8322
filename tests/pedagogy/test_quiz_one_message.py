"""A quiz and what the model writes around it leave as one WhatsApp message (each is billed): the
texts above the numbered options, the buttons below; apart only when the body would pass 1,024."""

from __future__ import annotations

from typing import Any

from tests.support.pedagogy import MCQ_ARGS, STUDENT, say


async def quiz_turn(h: Any, before: str, after: str) -> list[dict[str, Any]]:
    await h.make_user(STUDENT, mode="child")
    h.llm.push_text("Bonjour ! On révise quoi ?")
    await say(h, STUDENT, "Bonjour")  # a quiz is never the conversation's first message
    sent = len(h.twilio.sent)
    h.llm.push_tool_calls(("interactive_quiz", MCQ_ARGS), content=before)
    h.llm.push_text(after)
    await say(h, STUDENT, "Fais-moi un quiz")
    return list(h.twilio.sent[sent:])


async def test_the_lines_around_a_quiz_ride_in_its_message(harness: Any) -> None:
    [message] = await quiz_turn(harness, "Voyons les tables.", "À toi de jouer !")
    shown = harness.twilio.shown(message)
    assert message.get("ContentSid")  # still buttons
    assert shown.startswith("Voyons les tables.\n\nÀ toi de jouer !\n\n🧠 Quiz : Combien font 3 × 5 ?")
    assert shown.rstrip().endswith("(1, 2, 3 ou 4).")  # the options and how to answer, last


async def test_a_long_line_after_a_quiz_goes_first_on_its_own(harness: Any) -> None:
    long = "Prends ton temps et relis bien la question avant de répondre. " * 20
    text, quiz = await quiz_turn(harness, "", long)
    assert not text.get("ContentSid") and text["Body"].startswith("Prends ton temps")
    assert quiz.get("ContentSid") and harness.twilio.shown(quiz).startswith("🧠 Quiz : Combien font")
