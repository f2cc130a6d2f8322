"""A question missed again is taught again, through the whole bot: an item missed twice in a row is
never replayed as it is; a REVISION round (at its end, or at once when it has nothing else) or a
turn hands it to the model with the student's wrong answers and an instruction to explain it another
way; the model's new question goes through interactive_quiz with `replaces`, is checked on the server
like any quiz, and is linked to the old item; an item missed four times is retired and replaced."""

from __future__ import annotations

from typing import Any

from bot.learning import schedule
from bot.storage.models import QuizItem
from tests.support.admin import add_flag
from tests.support.learner import add_items, items_of, results_of, student_in_conversation
from tests.support.pedagogy import MCQ_ARGS, STUDENT, ask_quiz, say

NEW_QUIZ: dict[str, Any] = {
    "question": "Au marché, 3 tas de 5 mangues : combien de mangues ?",
    "options": ["8", "15", "35"],
    "correct_index": 1,
    "explanation": "NOUVELLE-EXPLICATION : 5 + 5 + 5 = 15.",
    "subject": "Maths",
    "topic": "autre chose",  # the server keeps the new question on the old item's skill
}


def system_prompt(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


async def twice_missed(h: Any) -> QuizItem:
    """The quiz of MCQ_ARGS missed (« 12 »), then missed again in a REVISION round (« 18 »)."""
    await ask_quiz(h)
    [verdict] = await say(h, STUDENT, "1")
    assert verdict.startswith("❌")
    h.clock.advance(days=1, hours=1)
    [question] = await say(h, STUDENT, "REVISION")
    assert MCQ_ARGS["question"] in question
    [end] = await say(h, STUDENT, "3")
    assert end.startswith("❌") and "Révision terminée : 0/1" in end
    [item] = [i for i in await items_of(h, (await h.user(STUDENT)).id) if i.question == MCQ_ARGS["question"]]
    assert (item.lapses, item.miss_streak, item.wrong_answers) == (2, 2, [0, 2])
    return item


def asks_to_reteach(request: dict[str, Any], item: QuizItem, now: bool) -> None:
    """The model's request carries the item, the student's wrong answers and the instruction."""
    system = system_prompt(request)
    assert "# À réexpliquer" in system and f"replaces={item.id}" in system
    assert MCQ_ARGS["question"] in system and "bonne réponse : 2) 15" in system
    assert "réponses de l'élève : 1) 12, 3) 18" in system
    assert "3 fois 5 font quinze" in system  # the explanation already given, to be given otherwise
    assert "Réexplique l'idée autrement qu'avant" in system and "Ne repose pas ces questions" in system
    assert ("fais-le maintenant" in system) is now


async def test_a_round_hands_a_twice_missed_item_to_the_model_for_a_new_checked_question(
        harness: Any) -> None:
    h = harness
    user = await h.make_user(STUDENT, mode="child")
    old = await twice_missed(h)
    assert old.conversation_id is not None  # another question, missed once: replayed as it is
    [other] = await add_items(h, user.id, old.conversation_id, 1, answered_at=h.clock())
    h.clock.advance(days=2)
    calls = len(h.llm.requests)
    [question] = await say(h, STUDENT, "REVISION")
    assert "Révision 1/1" in question and "Question n°1 ?" in question
    assert MCQ_ARGS["question"] not in question  # never asked again as it is
    assert len(h.llm.requests) == calls
    h.llm.push_tool_calls(("interactive_quiz", {**NEW_QUIZ, "replaces": old.id}),
                          content="Voyons-le autrement : 3 tas de 5, c'est 5 + 5 + 5.")
    h.llm.push_text("À toi !")
    texts = await say(h, STUDENT, "2")
    assert texts[0].startswith("✅") and "Révision terminée : 1/1" in texts[0]
    assert "Voyons-le autrement" in texts[1]
    assert any(NEW_QUIZ["question"] in t and "1️⃣ 8" in t for t in texts)
    assert not any(MCQ_ARGS["question"] in t for t in texts)
    asks_to_reteach(h.llm.requests[calls], old, now=True)
    # The new question is checked on the server like any quiz, with no model call.
    calls = len(h.llm.requests)
    [verdict] = await say(h, STUDENT, "2")
    assert verdict.startswith("✅") and "NOUVELLE-EXPLICATION" in verdict and len(h.llm.requests) == calls
    items = {i.id: i for i in await items_of(h, user.id)}
    [new] = [i for i in items.values() if i.question == NEW_QUIZ["question"]]
    assert new.replaces_item_id == old.id and (new.subject, new.skill) == ("Mathématiques", "multiplication")
    assert (new.answers, new.last_correct) == (1, True)
    assert items[old.id].retaught_at is not None and items[old.id].miss_streak == 0
    assert items[old.id].retired_at is None and items[other].answers == 2
    last = (await results_of(h, user.id))[-1]
    assert (last.item_id, last.source, last.verified, last.correct, last.skill) == (
        new.id, "quiz", True, True, "multiplication")


async def test_a_turn_is_told_to_teach_a_twice_missed_item_again(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    old = await twice_missed(h)
    h.llm.push_text("Bien sûr !")
    await say(h, STUDENT, "On peut revoir les multiplications ?")
    asks_to_reteach(h.llm.requests[-1], old, now=False)
    # An id that is no question of this student waiting to be taught again is refused.
    h.llm.push_tool_calls(("interactive_quiz", {**NEW_QUIZ, "replaces": old.id + 100}))
    h.llm.push_tool_calls(("interactive_quiz", {**NEW_QUIZ, "replaces": old.id}))
    h.llm.push_text("À toi !")
    texts = await say(h, STUDENT, "Oui, un exemple s'il te plaît")
    refusal = str(h.llm.requests[-2]["messages"][-1])
    assert "is not a question of this student waiting to be taught again" in refusal
    assert sum(NEW_QUIZ["question"] in t for t in texts) == 1
    [verdict] = await say(h, STUDENT, "1")
    assert verdict.startswith("❌") and "NOUVELLE-EXPLICATION" in verdict
    [new] = [i for i in await items_of(h, old.user_id) if i.question == NEW_QUIZ["question"]]
    assert new.replaces_item_id == old.id and new.lapses == 1
    # Taught again: no longer listed for the model.
    h.llm.push_text("D'accord.")
    await say(h, STUDENT, "Merci")
    assert "# À réexpliquer" not in system_prompt(h.llm.requests[-1])


async def test_an_item_missed_four_times_is_retired_and_replaced(harness: Any) -> None:
    h = harness
    user, conversation = await student_in_conversation(h)
    [item_id] = await add_items(h, user.id, conversation, 1, answered_at=h.clock())
    async with h.services.sessions() as db:  # missed three times, taught again after the second
        item = await db.get(QuizItem, item_id)
        assert item is not None
        h.clock.advance(days=1)
        schedule(item, False, h.clock(), chosen=0)
        assert (item.lapses, item.miss_streak) == (2, 2)
        item.retaught_at, item.miss_streak = h.clock(), 0
        h.clock.advance(days=1)
        schedule(item, False, h.clock(), chosen=0)
        assert (item.lapses, item.miss_streak, item.wrong_answers) == (3, 1, [0, 0])
        await db.commit()
    h.clock.advance(days=2)
    [question] = await say(h, STUDENT, "REVISION")  # taught again once: asked again as it is
    assert "Révision 1/1" in question and "Question n°1 ?" in question
    [end] = await say(h, STUDENT, "3")
    assert end.startswith("❌") and "0/1" in end
    [item] = await items_of(h, user.id)
    assert (item.lapses, item.retired_at, item.due_at) == (4, h.clock(), None)  # retired: never due
    # The next session opens with REVISION: the round has nothing to ask and hands it over at once,
    # and the new question may come on the session's first message.
    h.clock.advance(hours=7)
    calls = len(h.llm.requests)
    h.llm.push_tool_calls(("interactive_quiz", {**NEW_QUIZ, "replaces": item_id}))
    h.llm.push_text("À toi !")
    texts = await say(h, STUDENT, "REVISION")
    assert any(NEW_QUIZ["question"] in t for t in texts) and not any("Question n°1" in t for t in texts)
    system = system_prompt(h.llm.requests[calls])
    assert f"replaces={item_id}" in system and "manquée 4 fois, retirée" in system
    assert "réponses de l'élève : 1) A, 1) A, 3) C" in system
    old, new = await items_of(h, user.id)
    assert new.replaces_item_id == old.id and old.retired_at is not None and old.due_at is None
    assert old.retaught_at == h.clock()
    # Replaced: never asked again, nor handed to the model again.
    [verdict] = await say(h, STUDENT, "2")
    assert verdict.startswith("✅")
    calls = len(h.llm.requests)
    [nothing] = await say(h, STUDENT, "REVISION")
    assert nothing.startswith("Rien à revoir pour le moment") and len(h.llm.requests) == calls


async def test_no_reteach_on_a_gentle_day(harness: Any) -> None:
    h = harness
    user = await h.make_user(STUDENT, mode="child")
    await twice_missed(h)
    await add_flag(h, user.id, "je suis triste")
    h.clock.advance(hours=7)
    calls = len(h.llm.requests)
    [text] = await say(h, STUDENT, "REVISION")
    assert text.startswith("Rien à revoir pour le moment") and len(h.llm.requests) == calls
    h.llm.push_text("Je t'écoute.")
    await say(h, STUDENT, "Bonjour")
    assert "# À réexpliquer" not in system_prompt(h.llm.requests[-1])
