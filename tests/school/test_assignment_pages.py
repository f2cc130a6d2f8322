"""Homework from the dashboard's class page: the form (its CSRF token, the class's teacher or an admin
only, a clear line for a bad one and nothing stored, throttled), the scores per student on the page
and in the roster's CSV export, and the parent's ENFANTS and weekly SMS."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select

from bot.channel import formatting
from bot.learning.progress import latest_summary_slot, send_weekly_summaries
from bot.storage.models import Assignment, AssignmentWork, ParentLink, ScheduledSend
from tests.support.admin import csrf_of, logged_in, make_cohort, make_operator
from tests.support.assignments import INSIDE, a_class, due_day
from tests.support.harness import Harness
from tests.support.pedagogy import say
from tests.support.study import tap

PAGE = "/admin/cohorts/6e%20A"
GOOD = {"skill": "Les fractions", "questions": "2"}
PARENT = "+2250700000039"


async def stored(h: Harness) -> list[int]:
    """How many assignments, students' works and planned notices there are."""
    async with h.services.sessions() as db:
        return [int(await db.scalar(select(func.count()).select_from(t)) or 0)
                for t in (Assignment, AssignmentWork, ScheduledSend)]


async def test_the_form_is_the_teachers_and_says_what_is_wrong(harness: Any) -> None:
    h = harness
    cohort_id, _ = await a_class(h)
    other = await make_cohort(h, "6e B", [])
    await make_operator(h, "prof@ecole.ci", role="teacher", cohorts=[cohort_id])
    await make_operator(h, "autre@ecole.ci", role="teacher", cohorts=[other])
    teacher, stranger = await logged_in(h, "prof@ecole.ci"), await logged_in(h, "autre@ecole.ci")
    try:
        status, page, _ = await teacher.get(PAGE)
        assert status == 200 and 'id="assign"' in page and "Aucun devoir pour l&#39;instant." in page
        token = csrf_of(page)
        assert (await teacher.post(PAGE + "/assign", GOOD))[0] == 403  # no token
        assert (await teacher.post(PAGE + "/assign", {**GOOD, "csrf_token": "x" * 43}))[0] == 403
        theirs = await stranger.csrf()
        assert (await stranger.post(PAGE + "/assign", {**GOOD, "csrf_token": theirs}))[0] == 404
        assert (await teacher.post("/admin/cohorts/Nope/assign", {**GOOD, "csrf_token": token}))[0] == 404
        for bad, said in [({"skill": "  "}, "la notion est vide"),
                          ({"questions": "abc"}, "doit être un nombre"),
                          ({"questions": "21"}, "de 1 à 20, pas 21"), ({"due": "2020-01-01"}, "est passée"),
                          ({"due": "10/03"}, "date invalide")]:
            status, body, _ = await teacher.post(PAGE + "/assign", {**GOOD, **bad, "csrf_token": token})
            assert status == 400 and said in body, (bad, status)
        assert await stored(h) == [0, 0, 0]
        form = {**GOOD, "due": due_day().isoformat(), "csrf_token": token}
        status, _, resp = await teacher.post(PAGE + "/assign", form)
        assert status == 303 and resp.headers["Location"] == PAGE + "#assignments"
        assert await stored(h) == [1, 3, 3] and not h.twilio.sent  # the page never waits on Twilio
        async with h.services.sessions() as db:
            assert await db.scalar(select(Assignment.created_by)) == "prof@ecole.ci"
    finally:
        await teacher.close()
        await stranger.close()


async def test_assigning_is_throttled_per_operator(harness: Any) -> None:
    h = harness
    cohort_id, _ = await a_class(h)
    await make_operator(h, "prof@ecole.ci", role="teacher", cohorts=[cohort_id])
    teacher = await logged_in(h, "prof@ecole.ci")
    try:
        token = csrf_of((await teacher.get(PAGE))[1])
        statuses = []
        for _ in range(20):  # ten free, then waits that double: a refusal comes, whatever the pace
            status, body, _ = await teacher.post(PAGE + "/assign", {**GOOD, "csrf_token": token})
            statuses.append(status)
            if status == 429:
                assert "Trop de devoirs donnés d&#39;un coup" in body
                break
        assert statuses[:10] == [303] * 10 and statuses[-1] == 429
        assert (await stored(h))[0] == len(statuses) - 1  # the refused one stored nothing
    finally:
        await teacher.close()


async def test_scores_on_the_page_in_the_export_and_for_the_parent(harness: Any) -> None:
    h = harness
    _, ids = await a_class(h)
    parent = await h.make_user(PARENT, mode="child", role="parent")
    async with h.services.sessions() as db:
        db.add(ParentLink(student_id=ids[INSIDE], parent_id=parent.id, status="confirmed",
                          created_at=h.clock(), confirmed_at=h.clock()))
        await db.commit()
    await make_operator(h, "admin@ecole.ci")
    admin = await logged_in(h, "admin@ecole.ci")
    try:
        token = csrf_of((await admin.get(PAGE))[1])
        assert (await admin.post(PAGE + "/assign", {**GOOD, "csrf_token": token}))[0] == 303
        await h.run_jobs("assignment_notices")
        calls = len(h.llm.requests)
        await tap(h, INSIDE, "devoir:1", "Commencer")
        await say(h, INSIDE, "1")
        [done] = await say(h, INSIDE, "2")
        assert "Devoir terminé : 2/2" in done and len(h.llm.requests) == calls
        status, page, _ = await admin.get(PAGE)
        table = page[page.index('id="homework"'):page.index("</table>", page.index('id="homework"'))]
        assert status == 200 and "Les fractions (2)" in table and "1/3 terminé" in table
        assert "Awa Koné</th><td>2/2</td>" in table and "Ama Bamba</th><td>pas commencé</td>" in table
        status, text, _ = await admin.get(PAGE + "/roster.csv")
        rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff")), delimiter=";"))
        column = rows[0].index(next(c for c in rows[0] if c.startswith("homework ")))
        assert rows[0][column].endswith(": Les fractions")
        assert {r[1]: r[column] for r in rows[1:]} == {"Awa Koné": "2/2", "Yao Koné": "pas commencé",
                                                      "Ama Bamba": "pas commencé"}
    finally:
        await admin.close()
    children = "\n".join(await say(h, PARENT, "ENFANTS"))
    assert "Devoirs : Les fractions 2/2." in children, children
    # The weekly SMS, at the next slot after the link was confirmed.
    settings = h.settings
    h.clock.now = latest_summary_slot(h.clock() + timedelta(days=7), settings.parent_summary_weekday,
                                      settings.parent_summary_hour, settings.default_timezone)
    before = len(await h.texts_to(PARENT))
    assert await send_weekly_summaries(h.services, h.clock()) == 1
    [weekly] = (await h.texts_to(PARENT))[before:]
    assert "Devoirs : Les fractions 2/2." in weekly and formatting.is_gsm7(weekly), weekly
