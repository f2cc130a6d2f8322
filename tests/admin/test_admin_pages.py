"""The dashboard's pages and exports: a teacher's scope (another class or student is 404, never any
message text), the class page's heatmap and students at risk, the CSV exports (and their injection
safety), the overview's numbers and the acknowledgement of safety flags."""

from __future__ import annotations

import csv
import io
from collections.abc import Awaitable, Callable
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.storage.models import Conversation, CreditEntry, OutboundMessage, SafetyFlag, TurnRecord
from bot.web.admin import safe_cell
from tests.support.admin import (
    add_flag,
    add_result,
    add_retaught,
    logged_in,
    make_cohort,
    make_operator,
    set_mastery,
)
from tests.support.harness import Harness


def test_a_cell_that_starts_a_formula_is_text() -> None:
    for cell in ("=1+1", "+2250700", "-3", "@SUM(A1)", "\tx", "\rx", " =1"):
        assert safe_cell(cell) == "'" + cell
    assert safe_cell("Awa =1") == "Awa =1" and safe_cell("") == "" and safe_cell("Jean-Marc") == "Jean-Marc"
    # Each piece a split on `,` or `;` (or a line break) would make a cell of.
    assert safe_cell("x;=1+1;y") == "x;'=1+1;y" and safe_cell("a,-b; @c") == "a,'-b;' @c"
    assert safe_cell("=a\n+b") == "'=a\n'+b"


async def test_a_teacher_sees_their_class_only_and_no_message_text(harness: Harness) -> None:
    h = harness
    mine = await h.make_user("+2250700000401", display_name="Awa Koné", school_level="6e")
    other = await h.make_user("+2250700000402", display_name="Yao Kouassi")
    own_class = await make_cohort(h, "6e A", [mine])
    await make_cohort(h, "6e B", [other])
    await make_operator(h, "prof@ecole.ci", role="teacher", cohorts=[own_class])
    await make_operator(h, "admin@ecole.ci")
    mine_flag = await add_flag(h, mine.id, "je veux plus vivre")
    other_flag = await add_flag(h, other.id, "il me frappe", category="abuse")
    teacher = await logged_in(h, "prof@ecole.ci")
    admin = await logged_in(h, "admin@ecole.ci")
    try:
        status, page, _ = await teacher.get("/admin/cohorts/6e%20A")
        assert status == 200 and "Awa Koné" in page and "Yao" not in page
        for path in ("/admin/cohorts/6e%20B", "/admin/cohorts/6e%20B/results.csv",
                     "/admin/cohorts/6e%20B/roster.csv", f"/admin/students/{other.id}",
                     "/admin/cohorts/nowhere", "/admin/students/999999"):
            assert (await teacher.get(path))[0] == 404, path
        assert (await teacher.get(f"/admin/students/{mine.id}"))[0] == 200
        status, page, _ = await teacher.get("/admin/")
        assert "6e A" in page and "6e B" not in page and "Estimated cost" not in page
        assert "Coût estimé" not in page  # the deployment's costs are the admin's

        status, page, _ = await teacher.get("/admin/flags")
        assert "Awa Koné" in page and "pensées de se faire du mal" in page
        assert "vivre" not in page and "Yao" not in page and "frappe" not in page
        status, page, _ = await admin.get("/admin/flags")
        assert "je veux plus vivre" in page and "il me frappe" in page

        csrf = await teacher.csrf()
        assert (await teacher.post(f"/admin/flags/{mine_flag}/acknowledge", {}))[0] == 403
        assert (await teacher.post(f"/admin/flags/{other_flag}/acknowledge", {"csrf_token": csrf}))[0] == 404
        status, _, resp = await teacher.post(f"/admin/flags/{mine_flag}/acknowledge", {"csrf_token": csrf})
        assert status == 303 and resp.headers["Location"] == "/admin/flags"
        async with h.services.sessions() as db:
            flags = {f.id: f for f in await db.scalars(select(SafetyFlag))}
        assert flags[mine_flag].acknowledged_at == h.clock() and flags[mine_flag].acknowledged_by is not None
        assert flags[other_flag].acknowledged_at is None
        status, page, _ = await admin.get("/admin/flags")
        assert "je veux plus vivre" not in page and "il me frappe" in page
    finally:
        await teacher.close()
        await admin.close()


async def test_the_class_page_shows_the_heatmap_and_who_is_at_risk(harness: Harness) -> None:
    h = harness
    now = h.clock()
    steady = await h.make_user("+2250700000411", display_name="Awa")
    quiet = await h.make_user("+2250700000412", display_name="Bintou",
                              last_inbound_at=now - timedelta(days=9))
    falling = await h.make_user("+2250700000413", display_name="Koffi")
    await make_cohort(h, "CM2", [steady, quiet, falling])
    await set_mastery(h, steady.id, {"Fractions": 0.97, "Géométrie": 0.42})
    await set_mastery(h, falling.id, {"Fractions": 0.61})
    await add_result(h, falling.id, "Fractions", True, now - timedelta(days=3))
    await add_result(h, falling.id, "Fractions", False, now - timedelta(days=1))
    await add_result(h, steady.id, "Géométrie", False, now - timedelta(days=2))
    await add_result(h, steady.id, "Géométrie", True, now - timedelta(days=1))
    await make_operator(h, "admin@ecole.ci")
    admin = await logged_in(h, "admin@ecole.ci")
    try:
        status, page, _ = await admin.get("/admin/cohorts/CM2")
        assert status == 200
        heat = page.split('id="heatmap"')[1].split("</table>")[0]
        assert heat.index("Fractions") < heat.index("Géométrie")
        awa = heat.split("Awa")[1].split("</tr>")[0]
        assert '<td class="m4">97</td>' in awa and '<td class="m1">42</td>' in awa
        koffi = heat.split("Koffi")[1].split("</tr>")[0]
        assert '<td class="m2">61</td>' in koffi and '<td class="mx">·</td>' in koffi
        risk = page.split('id="at-risk"')[1].split("</ul>")[0]
        assert "Bintou" in risk and "aucun message depuis 7 jours" in risk
        assert "Koffi" in risk and "maîtrise en baisse : Fractions" in risk
        assert "Awa" not in risk  # her last Géométrie answer was right
    finally:
        await admin.close()


async def test_the_heatmap_counts_the_questions_taught_again(harness: Harness) -> None:
    h = harness
    awa = await h.make_user("+2250700000441", display_name="Awa")
    koffi = await h.make_user("+2250700000442", display_name="Koffi")
    await make_cohort(h, "CM1", [awa, koffi])
    await set_mastery(h, awa.id, {"Fractions": 0.22, "Géométrie": 0.80})
    await set_mastery(h, koffi.id, {"Fractions": 0.55})
    await add_retaught(h, awa.id, "Fractions", 2)
    await add_retaught(h, koffi.id, "Géométrie", 1)  # taught again before any mastery row of his
    await make_operator(h, "admin@ecole.ci")
    admin = await logged_in(h, "admin@ecole.ci")
    try:
        status, page, _ = await admin.get("/admin/cohorts/CM1")
        assert status == 200 and "↻ réexpliqué" in page.split('class="legend"')[1].split("</p>")[0]
        assert "« ↻ 2 » : réexpliqué deux fois" in page
        heat = page.split('id="heatmap"')[1].split("</table>")[0]
        awa_row = heat.split("Awa")[1].split("</tr>")[0]
        assert '<td class="m0">22<span class="rt" title="réexpliqué ×2">↻2</span></td>' in awa_row
        assert '<td class="m3">80</td>' in awa_row
        koffi_row = heat.split("Koffi")[1].split("</tr>")[0]
        assert '<td class="m2">55</td>' in koffi_row
        assert '<td class="mx">·<span class="rt" title="réexpliqué ×1">↻1</span></td>' in koffi_row
        status, page, _ = await admin.get("/admin/cohorts/CM1", headers={"Accept-Language": "en"})
        assert 'title="re-taught ×2">↻2</span>' in page and "re-taught twice" in page
    finally:
        await admin.close()


async def test_the_csv_exports_are_complete_and_injection_safe(harness: Harness) -> None:
    h = harness
    now = h.clock()
    hostile = await h.make_user("+2250700000421", display_name='=HYPERLINK("http://evil","x")',
                                school_level="3e")
    await make_cohort(h, "3e", [hostile])
    await add_result(h, hostile.id, "@Équations", False, now - timedelta(days=2))
    await add_result(h, hostile.id, "Équations", True, now - timedelta(days=1))
    await make_operator(h, "admin@ecole.ci")
    admin = await logged_in(h, "admin@ecole.ci")
    try:
        status, body, resp = await admin.get("/admin/cohorts/3e/roster.csv")
        assert status == 200 and resp.headers["Content-Type"].startswith("text/csv")
        assert resp.headers["Content-Disposition"] == 'attachment; filename="3e-roster.csv"'
        rows = list(csv.reader(io.StringIO(body.lstrip("\ufeff")), delimiter=";"))  # French by default
        assert rows[0] == ["student_id", "name", "phone", "level", "last_activity", "joined_at"]
        assert rows[1][:4] == [str(hostile.id), "'=HYPERLINK(\"http://evil\",\"x\")", "'+2250700000421", "3e"]
        status, body, _ = await admin.get("/admin/cohorts/3e/results.csv")
        rows = list(csv.reader(io.StringIO(body.lstrip("\ufeff")), delimiter=";"))
        assert rows[0] == ["student_id", "name", "answered_at", "subject", "skill", "correct", "source",
                           "verified"]
        # The skill as the student wrote it (never its key), the time in French form.
        assert [(r[4], r[5]) for r in rows[1:]] == [("'@Équations", "0"), ("Équations", "1")]
        assert all(r[1].startswith("'=") for r in rows[1:])
    finally:
        await admin.close()


async def test_the_overview_counts_activity_use_and_cost(
        make_harness: Callable[..., Awaitable[Harness]]) -> None:
    h = await make_harness(COST_PER_1K_TOKENS="2")
    now = h.clock()
    today = await h.make_user("+2250700000431")
    await h.make_user("+2250700000432", last_inbound_at=now - timedelta(days=3))
    await h.make_user("+2250700000433", last_inbound_at=now - timedelta(days=40))
    async with h.services.sessions() as db, db.begin():
        conversation_id = await _conversation(db, today.id)
        db.add(TurnRecord(conversation_id=conversation_id, user_id=today.id, exit_reason="final",
                          prompt_tokens=1500, completion_tokens=500, created_at=now))
        db.add(CreditEntry(user_id=today.id, delta=-7, reason="usage", balance_after=0, created_at=now))
        for n, (channel, status, code, segments, template) in enumerate((
                ("whatsapp", "delivered", None, 1, False), ("whatsapp", "failed", "63016", 1, False),
                ("whatsapp", "delivered", None, 1, True),  # an approved template, outside the window
                ("sms", "delivered", None, 2, False), ("sms", "undelivered", "30008", 1, False))):
            db.add(OutboundMessage(user_id=today.id, channel=channel, to_addr="x", status=status,
                                   error_code=code, segments=segments, sid=f"SMtest{n}", created_at=now,
                                   template=template))
    await make_operator(h, "admin@ecole.ci")
    admin = await logged_in(h, "admin@ecole.ci")
    try:
        answer, page, _ = await admin.get("/admin/")
        assert answer == 200
        assert '<div class="n" id="active-today">1</div>' in page
        assert '<div class="n" id="active-7">2</div>' in page
        assert '<div class="n" id="active-30">2</div>' in page
        assert '<td class="num" id="turns">1</td>' in page
        assert '<td class="num" id="credits-spent">7</td>' in page
        assert '<td class="num" id="templates-sent">1</td>' in page
        # The cost is the cost meter's table alone (the messages unpriced here, 2,000 tokens × 2/1,000
        # = 4 FCFA, nobody wrote in the month), not the flat estimate it replaced.
        month = page.split('id="cost-month"')[1].split("</tr>")[0]
        assert month.count("4\u202fFCFA") == 2 and '<td class="num per-learner">—</td>' in month
        assert "Coût estimé" not in page and 'id="cost-total"' not in page
        failures = page.split('id="failures"')[1].split("</table>")[0]
        assert "<td>63016</td>" in failures and "<td>30008</td>" in failures
        assert "<svg" in page and 'role="img"' in page
    finally:
        await admin.close()


async def _conversation(db: AsyncSession, user_id: int) -> int:
    conversation = Conversation(user_id=user_id)
    db.add(conversation)
    await db.flush()
    return conversation.id
