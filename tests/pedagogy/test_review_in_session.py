"""Reviews inside the student's own session: after the verdict on the tutor's quiz, a question due
comes at once as a round of one (twice a conversation at most), checked with no model call, its score
offering the next round with the button « Réviser »; and a round, or the offer at a session's start,
takes the items due within the hour (REVIEW_AHEAD), so that a student who comes at 18:40 meets the
questions due at 19:00."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import update

from bot.learning import REVIEW_AHEAD, WOVEN_MAX
from bot.storage.models import QuizItem
from tests.support.admin import add_flag
from tests.support.learner import (
    add_item,
    add_items,
    items_of,
    results_of,
    retry_last_inbound,
    student_in_conversation,
)
from tests.support.pedagogy import STUDENT, ask_quiz, say
from tests.support.study import buttons, tap

WOVEN = "🔁 Et une question à revoir :"


async def test_a_question_due_comes_after_the_quiz_verdict_twice_a_conversation(harness: Any) -> None:
    h = harness
    user, conversation = await student_in_conversation(h)
    ids = await add_items(h, user.id, conversation, 3, answered_at=h.clock())
    h.clock.advance(days=2)
    await ask_quiz(h)  # a new session: « Bonjour » gets the offer, then the quiz
    calls = len(h.llm.requests)
    [reply] = await say(h, STUDENT, "2")
    verdict, woven = reply.split(f"\n\n{WOVEN}\n\n")
    assert verdict.startswith("✅") and "📚 Révision 1/1" in woven and "Question n°1 ?" in woven
    await retry_last_inbound(h, user.id)  # the quiz's answer delivered again: nothing twice
    [score] = await say(h, STUDENT, "2")
    assert score.startswith("✅")
    offer = "📝 2 questions à revoir — écris REVISION"
    assert score.endswith(f"Révision terminée : 1/1 — parfait, bravo !\n\n{offer}")
    assert buttons(h.twilio.sent[-1]) == [("Réviser", "revise:1"), ("Plus tard", "revise:2")]
    assert len(h.llm.requests) == calls  # no model call for the verdict, the question or its score
    quiz, review = await results_of(h, user.id)
    assert (quiz.source, review.source, review.item_id, review.correct) == ("quiz", "review", ids[0], True)
    # The next quiz of the conversation: the next question due; then no more (WOVEN_MAX).
    assert WOVEN_MAX == 2
    await ask_quiz(h, first=False)
    [reply] = await say(h, STUDENT, "2")
    assert WOVEN in reply and "Question n°2 ?" in reply
    [score] = await say(h, STUDENT, "1")
    assert score.startswith("❌") and "Révision terminée : 0/1" in score and "📝 1 question à revoir" in score
    [question] = await tap(h, STUDENT, "revise:1", "Réviser")  # the next round, one tap away
    assert question.startswith("1 question à revoir. C'est parti !") and "Question n°3 ?" in question
    score, _retaught = await say(h, STUDENT, "2")  # then the model teaches n°2 again, missed twice
    assert score.endswith("Révision terminée : 1/1 — parfait, bravo !")  # nothing more due: no offer
    await ask_quiz(h, first=False)
    [verdict] = await say(h, STUDENT, "2")
    assert verdict.startswith("✅") and "Révision" not in verdict
    assert [i.answers for i in await items_of(h, user.id)][:3] == [2, 2, 2]


async def test_no_question_after_the_verdict_when_none_is_due_or_on_a_gentle_day(harness: Any) -> None:
    h = harness
    user, _conversation = await student_in_conversation(h)
    await add_item(h.services, user.id, h.clock() + REVIEW_AHEAD + timedelta(minutes=30))  # due later
    await ask_quiz(h, first=False)
    [verdict] = await say(h, STUDENT, "2")
    assert verdict.startswith("✅") and "Révision" not in verdict
    await add_item(h.services, user.id, h.clock() - timedelta(hours=1))
    await add_flag(h, user.id, "je suis triste")
    await ask_quiz(h, first=False)
    [verdict] = await say(h, STUDENT, "2")
    assert verdict.startswith("✅") and "Révision" not in verdict


async def due_at(h: Any, item_id: int, at: datetime) -> None:
    async with h.services.sessions() as db:
        await db.execute(update(QuizItem).where(QuizItem.id == item_id).values(due_at=at))
        await db.commit()


async def test_a_round_takes_the_questions_due_within_the_hour(harness: Any) -> None:
    h = harness
    user, conversation = await student_in_conversation(h)
    soon, later = await add_items(h, user.id, conversation, 2, answered_at=h.clock() - timedelta(hours=20))
    await due_at(h, soon, h.clock() + REVIEW_AHEAD - timedelta(minutes=20))
    await due_at(h, later, h.clock() + REVIEW_AHEAD + timedelta(minutes=20))
    [question] = await say(h, STUDENT, "REVISION")
    assert question.startswith("1 question à revoir. C'est parti !") and "Question n°1 ?" in question
    [score] = await say(h, STUDENT, "2")
    assert score.endswith("Révision terminée : 1/1 — parfait, bravo !")  # the other is not due yet
    [review] = await results_of(h, user.id)
    assert review.item_id == soon


async def test_the_session_offer_counts_the_questions_due_within_the_hour(harness: Any) -> None:
    h = harness
    user, conversation = await student_in_conversation(h)
    [item] = await add_items(h, user.id, conversation, 1, answered_at=h.clock())
    await due_at(h, item, h.clock() + timedelta(days=1) + REVIEW_AHEAD - timedelta(minutes=20))
    h.clock.advance(days=1)  # a new session, the question due in 40 minutes
    h.llm.push_text("Bonsoir !")
    assert await say(h, STUDENT, "Bonsoir") == ["Bonsoir !\n\n📝 1 question à revoir — écris REVISION"]


async def test_a_request_instead_of_an_answer_goes_to_the_tutor(harness: Any) -> None:
    h = harness
    user, conversation = await student_in_conversation(h)
    await add_items(h, user.id, conversation, 2, answered_at=h.clock())
    h.clock.advance(days=2)
    await ask_quiz(h)
    [reply] = await say(h, STUDENT, "2")
    assert WOVEN in reply and "Question n°1 ?" in reply
    calls = len(h.llm.requests)
    texts = await ask_quiz(h, first=False)  # « Fais-moi un quiz »: not « Réponds par 1, 2, 3 ou 4 »
    assert len(h.llm.requests) > calls and any("Combien font" in t for t in texts)
    [reply] = await say(h, STUDENT, "2")  # the tutor's new quiz is what it answers
    assert reply.startswith("✅") and WOVEN in reply
    assert [r.source for r in await results_of(h, user.id)] == ["quiz", "quiz"]
