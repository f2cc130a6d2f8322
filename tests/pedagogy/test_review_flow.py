"""REVISION / REVIEW through the whole bot: kept quiz items asked again as numbered menus, checked on
the server with no model call (the fake model gets no request), five at most, then the score; the
answer reschedules the item and moves mastery; bad replies change nothing; NON / OUI for reminders."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update

from bot.learning import keep_item, schedule
from bot.storage.models import PendingMenu
from tests.support.learner import (
    add_items,
    items_of,
    mastery_of,
    results_of,
    retry_last_inbound,
    student_in_conversation,
)
from tests.support.pedagogy import MCQ_ARGS, OTHER, SECRET, STUDENT, ask_quiz, say, to_the_afternoon


async def test_revision_asks_a_missed_question_again_without_the_model(harness: Any) -> None:
    h = harness
    to_the_afternoon(h.clock)
    user = await h.make_user(STUDENT, mode="child")
    await ask_quiz(h)
    await say(h, STUDENT, "1")  # missed
    [item] = await items_of(h, user.id)
    first_due = item.due_at
    assert first_due is not None and h.clock() < first_due <= h.clock() + timedelta(days=1)
    h.clock.advance(days=1, hours=1)
    calls = len(h.llm.requests)
    [question] = await say(h, STUDENT, "Révision")
    assert question.startswith("1 question à revoir. C'est parti !")
    assert "📚 Révision 1/1" in question and MCQ_ARGS["question"] in question and "1️⃣ 12\n2️⃣ 15" in question
    assert SECRET not in question
    [verdict] = await say(h, STUDENT, "2")
    assert verdict.startswith("✅") and SECRET in verdict
    assert verdict.endswith("Révision terminée : 1/1 — parfait, bravo !")  # nothing more due: no offer
    assert len(h.llm.requests) == calls  # no model call for the round
    [item] = await items_of(h, user.id)
    now = h.clock()
    assert (item.answers, item.lapses, item.last_correct) == (2, 1, True)
    assert item.due_at > now + timedelta(days=1) and item.last_answered_at == now
    quiz, review = await results_of(h, user.id)
    assert (quiz.source, quiz.correct) == ("quiz", False)
    assert (review.source, review.verified, review.correct, review.item_id) == ("review", True, True, item.id)
    assert (review.subject, review.skill, review.topic) == (
        "Mathématiques", "multiplication", "multiplication")
    [mastery] = await mastery_of(h, user.id)
    assert (mastery.answers, mastery.correct) == (2, 1)
    # The round is over: a number is an ordinary message again, and the tutor hears of the review.
    h.llm.push_text("Bien joué !")
    assert await say(h, STUDENT, "2") == ["Bien joué !"]
    assert "[Review]" in str(h.llm.requests[-1]["messages"])


async def test_a_round_is_five_questions_then_its_score(harness: Any) -> None:
    h = harness
    user, conversation = await student_in_conversation(h)
    ids = await add_items(h, user.id, conversation, 6, answered_at=h.clock())
    h.clock.advance(days=2)
    calls = len(h.llm.requests)
    [first] = await say(h, STUDENT, "revision")
    assert first.startswith("5 questions à revoir.") and "Révision 1/5" in first and "Question n°1 ?" in first
    replies = []
    for n, answer in enumerate(["2", "b", "B", "1", "2"]):  # the 4th is wrong
        [reply] = await say(h, STUDENT, answer)
        replies.append(reply)
        assert reply.startswith("❌" if n == 3 else "✅")
        if n == 1:  # the same message delivered again by the worker: nothing recorded twice
            await retry_last_inbound(h, user.id)
            assert len(await results_of(h, user.id)) == 2
    for n, reply in enumerate(replies[:-1]):
        assert f"Révision {n + 2}/5" in reply and f"Question n°{n + 2} ?" in reply
    # The 6th is due still: the score offers it, as REVISION's next round.
    offer = "📝 1 question à revoir — écris REVISION"
    assert replies[-1].endswith(f"Révision terminée : 4/5 — bravo !\n\n{offer}")
    assert len(h.llm.requests) == calls
    results = await results_of(h, user.id)
    assert [(r.item_id, r.correct, r.source) for r in results] == [
        (ids[0], True, "review"), (ids[1], True, "review"), (ids[2], True, "review"),
        (ids[3], False, "review"), (ids[4], True, "review")]
    assert [i.answers for i in await items_of(h, user.id)] == [2, 2, 2, 2, 2, 1]  # the 6th waits
    [mastery] = await mastery_of(h, user.id)
    assert (mastery.skill, mastery.answers, mastery.correct) == ("fraction", 5, 4)


async def test_a_reply_that_is_not_an_option_changes_nothing(harness: Any) -> None:
    h = harness
    user, conversation = await student_in_conversation(h)
    await add_items(h, user.id, conversation, 1, answered_at=h.clock())
    h.clock.advance(days=2)
    calls = len(h.llm.requests)
    await say(h, STUDENT, "REVISION")
    [before] = await items_of(h, user.id)
    for bad in ("7", "e", "euh", "je sais pas"):
        assert await say(h, STUDENT, bad) == ["Réponse attendue : 1, 2, 3 ou 4."]
    assert len(h.llm.requests) == calls
    [after] = await items_of(h, user.id)
    assert (after.answers, after.due_at, after.card) == (before.answers, before.due_at, before.card)
    assert await results_of(h, user.id) == [] and await mastery_of(h, user.id) == []
    # Commands still work, and a question goes to the tutor; the review question stays pending.
    [menu] = await say(h, STUDENT, "MENU")
    assert "PROGRES" in menu
    h.llm.push_text("Une fraction est une part d'un tout.")
    assert await say(h, STUDENT, "c'est quoi une fraction ?") == ["Une fraction est une part d'un tout."]
    [verdict] = await say(h, STUDENT, "2")
    assert verdict.startswith("✅") and "1/1" in verdict


async def test_revision_with_nothing_to_review(harness: Any) -> None:
    h = harness
    user, conversation = await student_in_conversation(h)
    calls = len(h.llm.requests)
    [none] = await say(h, STUDENT, "REVISION")
    assert none.startswith("Tu n'as pas encore de questions à revoir. Demande-moi un quiz")
    await add_items(h, user.id, conversation, 1, answered_at=h.clock(), correct=True)  # right: due later
    [later] = await say(h, STUDENT, "REVISION")
    assert later.startswith("Rien à revoir pour le moment") and "quiz" in later
    # Nothing due, but two were just missed: those come back, the latest missed first.
    await add_items(h, user.id, conversation, 2, answered_at=h.clock() + timedelta(seconds=1))
    [missed] = await say(h, STUDENT, "REVISION")
    assert missed.startswith("Rien n'est à revoir aujourd'hui : reprenons les 2 questions manquées")
    assert "Révision 1/2" in missed and "Question n°2 ?" in missed
    assert len(h.llm.requests) == calls


async def test_revision_non_and_oui_stop_and_restart_the_reminders(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await h.make_user(OTHER, mode="child", language="en")
    [off] = await say(h, STUDENT, "REVISION NON")
    assert off.startswith("C'est noté : plus de rappels pour réviser.")
    assert (await h.user(STUDENT)).review_nudges is False
    [on] = await say(h, STUDENT, "révision oui")
    assert on.startswith("C'est noté : je te rappellerai") and (await h.user(STUDENT)).review_nudges is True
    [off] = await say(h, OTHER, "REVIEW OFF")
    assert off.startswith("Done: no more review reminders.") and (await h.user(OTHER)).review_nudges is False
    [on] = await say(h, OTHER, "review on")
    assert on.startswith("Done: I will remind you") and (await h.user(OTHER)).review_nudges is True
    assert h.llm.requests == []


async def test_a_late_answer_to_a_review_gets_a_hint(make_harness: Any) -> None:
    h = await make_harness(QUIZ_TTL_S="120")
    user, conversation = await student_in_conversation(h)
    await add_items(h, user.id, conversation, 1, answered_at=h.clock())
    h.clock.advance(days=2)
    await say(h, STUDENT, "REVISION")
    h.clock.advance(seconds=121)
    calls = len(h.llm.requests)
    [hint] = await say(h, STUDENT, "2")
    assert hint == "⏰ Cette révision a expiré. Écris REVISION pour en commencer une autre."
    assert len(h.llm.requests) == calls and await results_of(h, user.id) == []


async def test_a_finished_round_that_expires_gives_no_hint(harness: Any) -> None:
    h = harness
    user, conversation = await student_in_conversation(h)
    await add_items(h, user.id, conversation, 1, answered_at=h.clock())
    h.clock.advance(days=2)
    await say(h, STUDENT, "REVISION")
    [done] = await say(h, STUDENT, "2")
    assert "1/1" in done
    # The finished round's menu expires (as the shared state's TTL and the row's end would have it).
    await h.services.state.kv_delete(f"menu:{conversation}")
    async with h.services.sessions() as db:
        await db.execute(update(PendingMenu).where(PendingMenu.conversation_id == conversation)
                         .values(expires_at=datetime.now(UTC) - timedelta(seconds=1)))
        await db.commit()
    h.llm.push_text("Deux quoi ?")
    assert await say(h, STUDENT, "2") == ["Deux quoi ?"]


async def test_a_true_false_item_on_sms(harness: Any) -> None:
    h = harness
    user, conversation = await student_in_conversation(h, channel="sms")
    async with h.services.sessions() as db:
        item = await keep_item(db, quiz_id="tf-sms-1", quiz_type="tf", user_id=user.id,
                               conversation_id=conversation, question="L'eau bout à 100 degrés.",
                               options=("true", "false"), correct_index=0,
                               explanation="À la pression normale.", subject="Physique-Chimie", topic="",
                               now=h.clock())
        schedule(item, False, h.clock())
        await db.commit()
    h.clock.advance(days=2)
    [question] = await say(h, STUDENT, "REVISION", channel="sms")
    assert "Révision 1/1\nVrai ou faux ? L'eau bout à 100 degrés.\n1 Vrai / 2 Faux" in question
    assert "📚" not in question and "🧠" not in question
    assert await say(h, STUDENT, "peut-être", channel="sms") == ["Réponse attendue : 1 (Vrai) ou 2 (Faux)."]
    [verdict] = await say(h, STUDENT, "vrai", channel="sms")
    assert verdict.startswith("Bravo, bonne réponse : Vrai") and "1/1" in verdict
    [mastery] = await mastery_of(h, user.id)
    assert (mastery.subject, mastery.skill, mastery.label, mastery.answers) == (
        "Physique-Chimie", "", "Physique-Chimie", 1)
