"""The dashboard as a French-speaking school reads it: moments in the school's time zone
(DEFAULT_TIMEZONE) as « mar. 10 mars 2026, 05:00 » (« Tue 10 Mar 2026, 05:00 » for an English
browser), never UTC ISO; costs as « 12 500 FCFA »; a skill as the student wrote it, never its key;
the CSV exports' moments in local time as each language's spreadsheet reads a date."""

from __future__ import annotations

import csv
import io
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import insert

from bot import formats
from bot.storage.models import Conversation, QuizItem, SkillMastery, TurnRecord
from tests.support.admin import add_flag, logged_in, make_cohort, make_operator
from tests.support.harness import Harness

EN = {"Accept-Language": "en-GB,en;q=0.9"}
NNBSP = "\u202f"


def test_dates_and_amounts_in_french_and_english() -> None:
    at = datetime(2026, 3, 10, 4, 0, tzinfo=UTC)
    assert formats.when(at, "fr", "Africa/Abidjan") == "mar. 10 mars 2026, 04:00"
    assert formats.when(at, "en", "Africa/Douala") == "Tue 10 Mar 2026, 05:00"
    assert formats.when(datetime(2026, 2, 28, 23, 30), "fr", "Africa/Douala") == "dim. 1 mars 2026, 00:30"
    assert formats.day(datetime(2026, 8, 3).date(), "fr") == "lun. 3 août 2026"
    assert formats.money(12500, "XOF", "fr") == f"12{NNBSP}500{NNBSP}FCFA"
    assert formats.money(12500, "XAF", "en") == f"12,500{NNBSP}FCFA"
    assert formats.money(34.5, "XOF", "fr") == f"35{NNBSP}FCFA"  # no centimes, half up
    assert formats.money(1234.5, "usd", "fr") == f"1{NNBSP}234,50{NNBSP}USD"
    assert formats.csv_time(at, "fr", "Africa/Douala") == "10/03/2026 05:00"
    assert formats.csv_time(at, "en", "Africa/Douala") == "2026-03-10 05:00"
    assert formats.csv_time(None, "fr", "Africa/Douala") == ""


async def test_the_dashboard_shows_moments_in_the_schools_zone(
        make_harness: Callable[..., Awaitable[Harness]]) -> None:
    h = await make_harness(DEFAULT_TIMEZONE="Africa/Douala")  # UTC+1
    wrote = datetime(2026, 3, 10, 4, 0, tzinfo=UTC)
    awa = await h.make_user("+2250700000461", display_name="Awa", last_inbound_at=wrote)
    await make_cohort(h, "Tle D", [awa])
    h.clock.now = datetime(2026, 3, 10, 4, 5, tzinfo=UTC)
    flag_id = await add_flag(h, awa.id, "je veux plus vivre")  # 5 minutes before the clock: 04:00 UTC
    await make_operator(h, "admin@ecole.ci")
    admin = await logged_in(h, "admin@ecole.ci")
    try:
        _, page, _ = await admin.get("/admin/cohorts/Tle%20D")
        roster = page.split('id="roster"')[1].split("</table>")[0]
        assert "<td>mar. 10 mars 2026, 05:00</td>" in roster
        assert "2026-03-10" not in page and "UTC" not in page
        _, page, _ = await admin.get("/admin/cohorts/Tle%20D", headers=EN)
        assert "<td>Tue 10 Mar 2026, 05:00</td>" in page.split('id="roster"')[1]
        _, page, _ = await admin.get(f"/admin/students/{awa.id}")
        assert "<td>mar. 10 mars 2026, 05:00</td>" in page and "UTC" not in page
        _, page, _ = await admin.get("/admin/flags")
        assert "— mar. 10 mars 2026, 05:00</p>" in page and "UTC" not in page
        _, page, _ = await admin.get(f"/admin/flags/{flag_id}", headers=EN)
        assert "<td>Tue 10 Mar 2026, 05:00</td>" in page and "UTC" not in page
        _, body, _ = await admin.get("/admin/cohorts/Tle%20D/roster.csv")
        rows = list(csv.reader(io.StringIO(body.lstrip("\ufeff")), delimiter=";"))
        assert rows[1][4] == "10/03/2026 05:00"
        _, body, _ = await admin.get("/admin/cohorts/Tle%20D/roster.csv", headers=EN)
        assert list(csv.reader(io.StringIO(body)))[1][4] == "2026-03-10 05:00"
    finally:
        await admin.close()


async def test_a_skill_due_is_shown_as_the_student_wrote_it(harness: Harness) -> None:
    h = harness
    now = h.clock()
    koffi = await h.make_user("+2250700000462", display_name="Koffi")
    await make_cohort(h, "3e", [koffi])
    async with h.services.sessions() as db, db.begin():
        await db.execute(insert(SkillMastery), [{
            "user_id": koffi.id, "subject": "Mathématiques", "skill": "pythagore",
            "label": "Théorème de Pythagore", "p_known": 0.4, "answers": 2, "correct": 1, "updated_at": now}])
        db.add(QuizItem(user_id=koffi.id, quiz_id="fmt-pythagore", quiz_type="mcq", question="?",
                        options=["a", "b"], correct_index=0, subject="Mathématiques", skill="pythagore",
                        answers=1, due_at=now - timedelta(hours=1), last_answered_at=now - timedelta(days=1),
                        created_at=now - timedelta(days=2)))
    await make_operator(h, "admin@ecole.ci")
    admin = await logged_in(h, "admin@ecole.ci")
    try:
        _, page, _ = await admin.get(f"/admin/students/{koffi.id}")
        due = page.split('id="due"')[1]
        assert "<td>Théorème de Pythagore</td>" in due
        assert "<td>pythagore</td>" not in page  # the key is never shown
        _, page, _ = await admin.get("/admin/cohorts/3e")
        assert "Théorème de Pythagore<span>" in page.split('id="heatmap"')[1]
    finally:
        await admin.close()


async def test_costs_are_shown_in_fcfa(make_harness: Callable[..., Awaitable[Harness]]) -> None:
    h = await make_harness(COST_PER_1K_TOKENS="12500")
    user = await h.make_user("+2250700000463")
    async with h.services.sessions() as db, db.begin():
        conversation = Conversation(user_id=user.id)
        db.add(conversation)
        await db.flush()
        db.add(TurnRecord(conversation_id=conversation.id, user_id=user.id, exit_reason="final",
                          prompt_tokens=800, completion_tokens=200, created_at=h.clock()))
    await make_operator(h, "admin@ecole.ci")
    admin = await logged_in(h, "admin@ecole.ci")
    try:
        _, page, _ = await admin.get("/admin/")
        month = page.split('id="cost-month"')[1].split("</tr>")[0]
        assert month.count(f'<td class="num">12{NNBSP}500{NNBSP}FCFA</td>') == 2  # the tokens, the total
        assert "XOF" not in page
        _, page, _ = await admin.get("/admin/", headers=EN)
        month = page.split('id="cost-month"')[1].split("</tr>")[0]
        assert month.count(f'<td class="num">12,500{NNBSP}FCFA</td>') == 2
    finally:
        await admin.close()
