"""Skills and mastery through the whole bot: every checked quiz answer lands under one canonical
subject and skill and moves its BKT estimate; what the model only reports is kept unverified and
moves nothing; the items and mastery are in the export, gone after erasure, kept by retention."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from bot import accounts
from bot.learning import bkt_update
from bot.pipeline.retention import purge
from bot.storage.models import Message, QuizItem, SkillMastery
from tests.support.learner import items_of, mastery_of, results_of
from tests.support.pedagogy import MCQ_ARGS, OTHER, STUDENT, ask_quiz, say, to_the_afternoon

NO_LABELS = {k: v for k, v in MCQ_ARGS.items() if k not in ("subject", "topic")}


async def test_subject_aliases_and_topic_spellings_land_in_one_skill(harness: Any) -> None:
    h = harness
    user = await h.make_user(STUDENT, mode="child")
    await ask_quiz(h, args={**MCQ_ARGS, "subject": "maths", "topic": "Fractions"})
    await say(h, STUDENT, "2")
    await ask_quiz(h, args={**MCQ_ARGS, "subject": "Mathématiques", "topic": "fraction"}, first=False)
    await say(h, STUDENT, "1")
    [row] = await mastery_of(h, user.id)
    assert (row.subject, row.skill, row.label, row.answers, row.correct) == (
        "Mathématiques", "fraction", "Fractions", 2, 1)
    assert [(i.subject, i.skill) for i in await items_of(h, user.id)] == [("Mathématiques", "fraction")] * 2
    assert [(r.subject, r.skill, r.source, r.verified) for r in await results_of(h, user.id)] == [
        ("Mathématiques", "fraction", "quiz", True)] * 2


async def test_each_quiz_answer_is_a_bkt_update_and_schedules_its_item(harness: Any) -> None:
    h = harness
    to_the_afternoon(h.clock)
    learning = h.settings.learning
    user = await h.make_user(STUDENT, mode="child")
    await ask_quiz(h)
    [item] = await items_of(h, user.id)
    assert (item.card, item.due_at, item.answers) == (None, None, 0)  # kept when asked, not yet scheduled
    await say(h, STUDENT, "2")  # right
    [row] = await mastery_of(h, user.id)
    after_right = bkt_update(learning.bkt_p_init, True, learning)
    assert row.p_known == pytest.approx(after_right) and (row.answers, row.correct) == (1, 1)
    await ask_quiz(h, args={**MCQ_ARGS, "question": "Combien font 3 × 6 ?"}, first=False)
    now = h.clock()
    await say(h, STUDENT, "4")  # wrong
    [row] = await mastery_of(h, user.id)
    assert row.p_known == pytest.approx(bkt_update(after_right, False, learning))
    assert (row.subject, row.skill, row.answers, row.correct) == ("Mathématiques", "multiplication", 2, 1)
    right, missed = await items_of(h, user.id)
    assert right.last_correct is True and missed.last_correct is False and missed.lapses == 1
    assert right.card is not None and missed.card is not None
    assert now < missed.due_at <= now + timedelta(days=1) < right.due_at  # missed: soon; right: later
    assert [r.item_id for r in await results_of(h, user.id)] == [right.id, missed.id]


async def test_a_missing_subject_is_the_conversations_last_one_else_autre(harness: Any) -> None:
    h = harness
    user = await h.make_user(STUDENT, mode="child")
    await ask_quiz(h, args={**MCQ_ARGS, "subject": "svt", "topic": "la cellule"})
    await say(h, STUDENT, "2")
    await ask_quiz(h, args=NO_LABELS, first=False)
    await say(h, STUDENT, "2")
    assert [(i.subject, i.skill) for i in await items_of(h, user.id)] == [("SVT", "cellule"), ("SVT", "")]
    # No topic: the answer counts under the subject as a whole.
    assert [(m.subject, m.skill, m.label, m.answers) for m in await mastery_of(h, user.id)] == [
        ("SVT", "", "SVT", 1), ("SVT", "cellule", "la cellule", 1)]
    other = await h.make_user(OTHER, mode="child")
    await ask_quiz(h, phone=OTHER, args=NO_LABELS)
    await say(h, OTHER, "2")
    assert [(i.subject, i.skill) for i in await items_of(h, other.id)] == [("Autre", "")]
    assert [(m.subject, m.skill) for m in await mastery_of(h, other.id)] == [("Autre", "")]


async def test_a_reported_result_is_kept_unverified_and_moves_no_mastery(harness: Any) -> None:
    h = harness
    user = await h.make_user(STUDENT, mode="child")
    h.llm.push_text("Bonjour ! On révise quoi ?")
    await say(h, STUDENT, "Bonjour")
    reported_args = {"subject": "maths", "topic": "Fractions", "correct": True}
    h.llm.push_tool_calls(("report_exercise_result", reported_args))
    h.llm.push_text("Bravo, c'est juste !")
    assert await say(h, STUDENT, "3/4 + 1/4 = 1") == ["Bravo, c'est juste !"]
    [reported] = await results_of(h, user.id)
    assert (reported.subject, reported.topic, reported.skill, reported.source, reported.verified) == (
        "Mathématiques", "Fractions", "fraction", "report", False)
    assert await mastery_of(h, user.id) == []
    # A checked answer on the same skill starts from the prior, as if nothing had been reported.
    await ask_quiz(h, args={**MCQ_ARGS, "topic": "fractions"}, first=False)
    await say(h, STUDENT, "2")
    [row] = await mastery_of(h, user.id)
    learning = h.settings.learning
    assert (row.skill, row.answers) == ("fraction", 1)
    assert row.p_known == pytest.approx(bkt_update(learning.bkt_p_init, True, learning))


async def test_export_and_forget_cover_items_and_mastery(harness: Any) -> None:
    h = harness
    user = await h.make_user(STUDENT, mode="child")
    other = await h.make_user(OTHER, mode="child")
    for phone in (STUDENT, OTHER):
        await ask_quiz(h, phone=phone)
        await say(h, phone, "1")
    async with h.services.sessions() as db:
        doc = await accounts.export(db, user, h.clock())
    [item] = doc["data"]["quiz_items"]
    assert (item["question"], item["subject"], item["skill"], item["last_correct"]) == (
        MCQ_ARGS["question"], "Mathématiques", "multiplication", False)
    [mastery] = doc["data"]["skill_mastery"]
    assert (mastery["subject"], mastery["skill"], mastery["answers"], mastery["correct"]) == (
        "Mathématiques", "multiplication", 1, 0)
    [result] = doc["data"]["exercise_results"]
    assert result["item_id"] == item["id"] and result["verified"] is True

    report = await accounts.forget_number(h.services, STUDENT)
    assert report.deleted["quiz_items"] == 1 and report.deleted["skill_mastery"] == 1
    async with h.services.sessions() as db:
        for model in (QuizItem, SkillMastery):
            left = select(func.count()).select_from(model).where(model.user_id == user.id)
            assert await db.scalar(left) == 0
    # The other student's items and mastery stay.
    assert len(await items_of(h, other.id)) == 1 and len(await mastery_of(h, other.id)) == 1


async def test_retention_keeps_items_mastery_and_results(harness: Any) -> None:
    h = harness
    user = await h.make_user(STUDENT, mode="child")
    await ask_quiz(h)
    await say(h, STUDENT, "1")
    h.clock.advance(days=h.settings.retention_days + 1)
    report = await purge(h.services, h.clock())
    assert report.deleted["messages"] > 0  # the purge did run over this student's old rows
    async with h.services.sessions() as db:
        assert await db.scalar(select(func.count()).select_from(Message)) == 0
    [item] = await items_of(h, user.id)
    assert item.last_correct is False and item.due_at is not None
    assert [m.answers for m in await mastery_of(h, user.id)] == [1]
    assert [r.item_id for r in await results_of(h, user.id)] == [item.id]
    # And the item still comes back for review.
    calls = len(h.llm.requests)
    [question] = await say(h, STUDENT, "REVISION")
    assert MCQ_ARGS["question"] in question and len(h.llm.requests) == calls
