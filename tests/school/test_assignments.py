"""A teacher's assignment (`cohorts assign`) as the students meet it: every student of the class told
(WhatsApp inside the window with a « Commencer » button, an SMS student by SMS, outside the window
ASSIGNMENT_TEMPLATE_SID through Twilio's Content API, or told on their next message when there is
none, never claimed sent), the questions from the class's bank asked through the webhook and checked
with no model call, and the scores in `cohorts show`. Bad requests change nothing."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from bot.learning import due_text, skill_key
from bot.storage.models import (
    AssignmentWork,
    Cohort,
    CohortMember,
    ExerciseResult,
    QuizItem,
    ScheduledSend,
    SkillMastery,
)
from tests.support.assignments import (
    APPROVED,
    BANK,
    BY_SMS,
    INSIDE,
    OUTSIDE,
    TEMPLATE,
    a_class,
    assign,
    at_the_notices_slot,
    due_day,
    works,
)
from tests.support.console import console
from tests.support.pedagogy import say
from tests.support.study import buttons, tap


async def test_every_student_is_told_on_their_channel_and_answers_without_the_model(
        make_harness: Any) -> None:
    h = await make_harness(ASSIGNMENT_TEMPLATE_SID=TEMPLATE)
    h.twilio.approve(TEMPLATE, APPROVED)
    _, ids = await a_class(h)
    run = await assign(h)
    assert "3 élève(s)" in run.out, run.out  # in the operator's language (DEFAULT_LANGUAGE)
    assert not h.twilio.sent  # the console never waited on Twilio: the job sends
    await at_the_notices_slot(h)
    await h.run_jobs("assignment_notices")
    line = f"Devoir : 2 questions sur Les fractions, avant le {due_text(due_day(), 'fr')}"
    [inside] = h.twilio.to(INSIDE)
    assert h.twilio.shown(inside) == f"📚 {line}" and buttons(inside) == [("Commencer", "devoir:1")]
    [sms] = h.twilio.to(BY_SMS)
    assert sms["To"] == BY_SMS and sms["Body"] == f"{line}. Écris DEVOIR pour commencer."
    [outside] = h.twilio.to(OUTSIDE)
    assert outside["ContentSid"] == TEMPLATE and json.loads(outside["ContentVariables"]) == {
        "1": "Les fractions", "2": "2", "3": due_text(due_day(), "fr")}
    told = await works(h)
    assert {uid: told[uid].notified_by for uid in ids.values()} == {
        ids[INSIDE]: "whatsapp", ids[BY_SMS]: "sms", ids[OUTSIDE]: "template"}
    await h.run_jobs("assignment_notices")  # once each
    assert len(h.twilio.sent) == 3
    calls = len(h.llm.requests)
    [first] = await tap(h, INSIDE, "devoir:1", "Commencer")
    assert "Devoir 1/2" in first and BANK[0][0] in first, first
    [second] = await say(h, INSIDE, "1")
    assert second.startswith("✅") and "Devoir 2/2" in second and BANK[1][0] in second, second
    [done] = await say(h, INSIDE, "Faux")
    assert "Devoir terminé : 2/2" in done, done
    [started] = await say(h, BY_SMS, "DEVOIR", channel="sms")
    assert "Devoir 1/2" in started and "Les fractions" in started
    [wrong] = await say(h, BY_SMS, "2", channel="sms")
    assert wrong.startswith("❌") or "Devoir 2/2" in wrong, wrong
    [over] = await say(h, BY_SMS, "2", channel="sms")
    assert "Devoir terminé : 1/2" in over, over
    assert len(h.llm.requests) == calls  # checked on the server: no model call
    scores = await works(h)
    assert [(scores[ids[p]].correct, scores[ids[p]].asked, scores[ids[p]].finished_at is not None)
            for p in (INSIDE, BY_SMS, OUTSIDE)] == [(2, 2, True), (1, 2, True), (0, 0, False)]
    async with h.services.sessions() as db:
        results = list(await db.scalars(select(ExerciseResult).where(ExerciseResult.user_id == ids[INSIDE])))
        items = list(await db.scalars(select(QuizItem).where(QuizItem.user_id == ids[INSIDE])))
        [mastery] = list(await db.scalars(select(SkillMastery).where(SkillMastery.user_id == ids[INSIDE])))
    assert [(r.source, r.correct, r.verified) for r in results] == [("assignment", True, True)] * 2
    assert all(i.class_item_id is not None and i.due_at is not None for i in items) and len(items) == 2
    assert (mastery.subject, mastery.answers, mastery.correct) == ("Mathématiques", 2, 2)
    shown = await console(h, "cohorts", "show", "6e A")
    assert shown.code == 0 and "devoir 1 : Les fractions, 2 question(s)" in shown.out, shown.out
    assert "2/3 fini(s)" in shown.out and "Awa Koné  2/2" in shown.out and "Yao Koné  1/2" in shown.out
    assert "Ama Bamba  pas commencé" in shown.out


async def test_without_a_template_nothing_is_claimed_and_they_are_told_when_they_write(harness: Any) -> None:
    h = harness
    _, ids = await a_class(h)
    await assign(h)
    await at_the_notices_slot(h)
    await h.run_jobs("assignment_notices")
    assert not h.twilio.to(OUTSIDE)
    async with h.services.sessions() as db:
        row = await db.scalar(select(ScheduledSend).where(ScheduledSend.user_id == ids[OUTSIDE]))
    assert row is not None and row.status == "skipped"
    assert (await works(h))[ids[OUTSIDE]].notified_at is None  # never claimed sent
    h.llm.push_text("Bonjour Ama !")
    notice, answer = await say(h, OUTSIDE, "Bonjour")
    assert notice.startswith("📚 Devoir : 2 questions sur Les fractions") and answer == "Bonjour Ama !"
    [sent_notice, _] = h.twilio.to(OUTSIDE)
    assert buttons(sent_notice) == [("Commencer", "devoir:1")]
    assert (await works(h))[ids[OUTSIDE]].notified_by == "reply"
    h.llm.push_text("Encore ?")
    assert await say(h, OUTSIDE, "Et toi ?") == ["Encore ?"]  # told once


async def test_a_bad_request_is_one_line_and_changes_nothing(harness: Any) -> None:
    h = harness
    await a_class(h)
    cases = [(("--skill", "fractions"), "Nope", 1, "aucune classe nommée 'Nope'"),
             (("--skill", "   "), "6e A", 2, "la notion est vide, rien n'a changé"),
             (("--skill", "fractions", "--questions", "0"), "6e A", 2, "de 1 à 20, pas 0"),
             (("--skill", "fractions", "--questions", "21"), "6e A", 2, "de 1 à 20, pas 21"),
             (("--skill", "fractions", "--due", "10/03/2026"), "6e A", 2, "date invalide '10/03/2026'"),
             (("--skill", "fractions", "--due", "2020-01-01"), "6e A", 2, "la date 2020-01-01 est passée")]
    for args, name, code, said in cases:
        run = await console(h, "cohorts", "assign", name, *args)
        assert run.code == code and said in run.err and len(run.err.strip().splitlines()) == 1, (args, run)
    async with h.services.sessions() as db:
        assert not list(await db.scalars(select(AssignmentWork)))
        assert not list(await db.scalars(select(ScheduledSend)))


async def test_the_students_own_questions_top_up_a_small_bank(harness: Any) -> None:
    h = harness
    _, ids = await a_class(h)
    async with h.services.sessions() as db:  # a quiz the tutor asked Awa on the skill, kept for review
        db.add(QuizItem(user_id=ids[INSIDE], quiz_id="own1", quiz_type="mcq", question="Que vaut 2/4 ?",
                        options=["1/2", "1/4"], correct_index=0, subject="Mathématiques",
                        skill=skill_key("Les fractions"), answers=1, lapses=0, created_at=h.clock()))
        await db.commit()
    run = await console(h, "cohorts", "assign", "6e A", "--skill", "Les fractions", "--questions", "5")
    assert run.code == 0, run.err
    calls = len(h.llm.requests)
    [first] = await say(h, INSIDE, "DEVOIR")
    assert "Devoir 1/3" in first and BANK[0][0] in first  # the bank's two, then her own one
    await say(h, INSIDE, "1")
    [third] = await say(h, INSIDE, "2")
    assert "Devoir 3/3" in third and "Que vaut 2/4 ?" in third, third
    [done] = await say(h, INSIDE, "1")
    assert "Devoir terminé : 3/3" in done and len(h.llm.requests) == calls
    # A class with no bank on the skill and a student with no question on it: told so, nothing started.
    alone = await h.make_user("+2250700000038")
    async with h.services.sessions() as db:
        cohort = Cohort(name="6e B", created_at=h.clock())
        db.add(cohort)
        await db.flush()
        db.add(CohortMember(cohort_id=cohort.id, user_id=alone.id, joined_at=h.clock()))
        await db.commit()
    assert (await console(h, "cohorts", "assign", "6e B", "--skill", "La géométrie")).code == 0
    [none] = await say(h, "+2250700000038", "DEVOIR")
    assert "5 questions sur La géométrie" in none and "Pas encore de questions sur La géométrie" in none
    assert (await works(h))[alone.id].started_at is None and len(h.llm.requests) == calls
