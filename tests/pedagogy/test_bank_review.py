"""A class's own questions in its students' review, through the whole bot: REVISION with room left
in the round asks the class's questions not answered yet, as buttons, checked on the server with
no model call; each answer is recorded on the student's own item (pointing to the bank question),
schedules it by FSRS and moves the skill's mastery; a student of no class meets none of them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from bot.learning import round_intro
from bot.school import add_items, read_items
from bot.storage.models import ClassItem, Cohort, CohortMember, ExerciseResult
from tests.support.learner import items_of, mastery_of, results_of, student_in_conversation
from tests.support.pedagogy import OTHER, STUDENT, say

BANK = ("Question;Choix 1;Choix 2;Choix 3;Bonne réponse;Explication;Matière;Notion\r\n"
        "Combien font 3 × 4 ?;7;12;34;2;BANQUE : 3 fois 4 font 12.;Maths;La multiplication\r\n"
        "Un triangle a quatre côtés.;Vrai;Faux;;Faux;BANQUE : trois côtés.;Maths;Les triangles\r\n"
        ).encode("cp1252")


async def class_with_bank(h: Any, user_id: int) -> list[int]:
    """A class with the student in it and the two questions of BANK; their ids."""
    async with h.services.sessions() as db, db.begin():
        cohort = Cohort(name="6e A", created_at=h.clock())
        db.add(cohort)
        await db.flush()
        db.add(CohortMember(cohort_id=cohort.id, user_id=user_id, joined_at=h.clock()))
        assert await add_items(db, cohort.id, read_items(BANK, "banque.csv"), h.clock()) == (2, 0)
    async with h.services.sessions() as db:
        return list(await db.scalars(select(ClassItem.id).order_by(ClassItem.id)))


async def tap(h: Any, payload: str, title: str) -> list[str]:
    before = len(await h.texts_to(STUDENT))
    status, _ = await h.inbound(STUDENT, title, extra={"ButtonPayload": payload, "ButtonText": title,
                                                       "MessageType": "button"})
    assert status == 200
    await h.settle()
    return (await h.texts_to(STUDENT))[before:]


def buttons(h: Any) -> list[dict[str, Any]]:
    sent = h.twilio.contents_sent()
    assert sent, h.twilio.bodies()
    [(kind, spec)] = sent[-1]["Rendered"].items()
    assert kind == "twilio/quick-reply", kind
    return list(spec["actions"])


async def test_revision_asks_the_class_questions_as_buttons_and_records_them(harness: Any) -> None:
    h = harness
    user, _conversation = await student_in_conversation(h)
    bank_ids = await class_with_bank(h, user.id)
    calls = len(h.llm.requests)
    [first] = await say(h, STUDENT, "REVISION")
    assert first.startswith("2 nouvelles questions de ta classe pour t'entraîner. C'est parti !"), first
    assert "Révision 1/2" in first and "Combien font 3 × 4 ?" in first and "BANQUE" not in first
    actions = buttons(h)
    assert [a["title"] for a in actions] == ["7", "12", "34"]
    [verdict] = await tap(h, actions[1]["id"], "12")
    assert verdict.startswith("✅") and "BANQUE : 3 fois 4 font 12." in verdict
    assert "Révision 2/2" in verdict and "Un triangle a quatre côtés." in verdict
    actions = buttons(h)
    assert [a["title"] for a in actions] == ["Vrai", "Faux"]
    [last] = await tap(h, actions[0]["id"], "Vrai")  # wrong: it has three sides
    assert last.startswith("❌") and "La bonne réponse : Faux" in last and "Révision terminée : 1/2" in last
    assert len(h.llm.requests) == calls  # checked on the server, no model call
    items = await items_of(h, user.id)
    assert [(i.class_item_id, i.quiz_type, i.answers, i.last_correct) for i in items] == [
        (bank_ids[0], "mcq", 1, True), (bank_ids[1], "tf", 1, False)]
    assert all(i.due_at is not None and i.due_at > h.clock() for i in items)
    results = await results_of(h, user.id)
    assert [(r.item_id, r.source, r.verified, r.correct) for r in results] == [
        (items[0].id, "review", True, True), (items[1].id, "review", True, False)]
    mastery = {m.skill: (m.answers, m.correct) for m in await mastery_of(h, user.id)}
    assert mastery == {"multiplication": (1, 1), "triangle": (1, 0)}
    # Nothing new in the bank: the next round is the question just missed, the same item.
    [again] = await say(h, STUDENT, "REVISION")
    assert again.startswith("Rien n'est à revoir aujourd'hui : reprenons la 1 question manquée"), again
    assert "Un triangle a quatre côtés." in again
    assert len(await items_of(h, user.id)) == 2


async def test_a_question_left_unanswered_comes_back_and_others_never_see_the_bank(harness: Any) -> None:
    h = harness
    user, _conversation = await student_in_conversation(h)
    await class_with_bank(h, user.id)
    await say(h, STUDENT, "REVISION")  # left there: its first question is never answered
    [back] = await say(h, STUDENT, "REVISION")
    assert back.startswith("2 nouvelles questions de ta classe") and "Combien font 3 × 4 ?" in back, back
    assert len(await items_of(h, user.id)) == 2  # each bank question is one item of the student's
    # A student of no class: no bank question.
    await h.make_user(OTHER, mode="child")
    [none] = await say(h, OTHER, "REVISION")
    assert none.startswith("Tu n'as pas encore de questions à revoir"), none
    async with h.services.sessions() as db:
        other_results = list(await db.scalars(
            select(ExerciseResult).where(ExerciseResult.user_id != user.id)))
    assert other_results == []


def test_the_round_says_which_questions_are_the_class() -> None:
    assert round_intro(3, True, "fr", new=2) == (
        "1 question à revoir, puis 2 nouvelles questions de ta classe. C'est parti !")
    assert round_intro(2, False, "fr", new=1) == (
        "Rien n'est à revoir aujourd'hui : reprenons la 1 question manquée en dernier, puis 1 nouvelle "
        "question de ta classe.")
    assert round_intro(1, False, "en", new=1) == "1 new question from your class to practise. Here we go!"
    assert round_intro(2, True, "fr") == "2 questions à revoir. C'est parti !"
