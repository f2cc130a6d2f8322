"""A class a school pays for: `cohorts fund` and the dashboard put credits in the class's pool
through the ledger; its students spend it before their own credits, at most CLASS_POOL_DAILY_CAP a
day each; a student with nothing left is told what they can do at every message, and never offered
a way of paying that is not set up."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select

from bot.storage.models import Cohort, CreditEntry, User
from tests.support.admin import csrf_of, logged_in, make_cohort, make_operator
from tests.support.console import console
from tests.support.harness import Harness

PHONE = "+2250700000501"
TOKENS_10_CREDITS = {"prompt_tokens": 19_900, "completion_tokens": 100, "total_tokens": 20_000}


async def say(h: Harness, body: str, phone: str = PHONE) -> list[str]:
    """Sends one message through the webhook; the bodies the user received for it."""
    before = len(h.twilio.to(phone))
    status, _ = await h.inbound(phone, body)
    assert status == 200
    await h.settle()
    return [h.twilio.shown(m) for m in h.twilio.to(phone)[before:]]


async def ledger(h: Harness) -> list[tuple[Any, ...]]:
    async with h.services.sessions() as db:
        rows = await db.scalars(select(CreditEntry).where(CreditEntry.reason != "signup")
                                .order_by(CreditEntry.id))
        return [(e.user_id, e.cohort_id, e.reason, e.delta, e.balance_after) for e in rows]


async def balances(h: Harness, user_id: int, cohort_id: int) -> tuple[int, int]:
    """(the student's own credits, the class's pool)."""
    async with h.services.sessions() as db:
        own = await db.scalar(select(User.credit_balance).where(User.id == user_id))
        pool = await db.scalar(select(Cohort.pool_balance).where(Cohort.id == cohort_id))
    return int(own or 0), int(pool or 0)


async def ask(h: Harness, text: str = "Explique-moi les fractions") -> None:
    """One question whose turn costs 10 credits (20,000 tokens at 2,000 a credit)."""
    h.llm.push_text("Voici.", usage=TOKENS_10_CREDITS)
    assert await say(h, text) == ["Voici."]


async def test_the_pool_is_spent_first_within_the_days_cap_then_the_students_own(make_harness: Any) -> None:
    h = await make_harness(CLASS_POOL_DAILY_CAP="25")
    student = await h.make_user(PHONE, credit_balance=30)
    cohort = await make_cohort(h, "6e A", [student])
    run = await console(h, "cohorts", "fund", "6e A", "100")
    assert run.code == 0 and "maintenant 100" in run.out, run.out + run.err
    assert "au plus 25 par jour" in run.out, run.out
    assert await ledger(h) == [(None, cohort, "pool_fund", 100, 100)]
    await ask(h)
    await ask(h)
    assert await balances(h, student.id, cohort) == (30, 80)  # the pool paid both
    await ask(h)  # 5 more from the pool reach the day's 25; the other 5 are the student's
    assert await balances(h, student.id, cohort) == (25, 75)
    await ask(h)
    assert await balances(h, student.id, cohort) == (15, 75)  # the cap holds for the day
    assert (await ledger(h))[1:] == [
        (student.id, cohort, "pool_usage", -10, 90), (student.id, cohort, "pool_usage", -10, 80),
        (student.id, cohort, "pool_usage", -5, 75), (student.id, None, "usage", -5, 25),
        (student.id, None, "usage", -10, 15)]
    h.clock.advance(days=1)  # a new day: the pool again
    await ask(h)
    assert await balances(h, student.id, cohort) == (15, 65)
    shown = await console(h, "cohorts", "show", "6e A")
    assert shown.code == 0, shown.err
    # 35 credits in 7 days: 5 a day, 65 left.
    assert ("réserve : 65 crédit(s) sur 100 versés ; 35 dépensé(s) ces 7 derniers jours, environ 13 jour(s) "
            "restant(s)") in shown.out


async def test_a_student_with_nothing_left_is_answered_at_every_message(make_harness: Any) -> None:
    h = await make_harness()  # no PAYMENT_PROVIDER: buying is not offered
    student = await h.make_user(PHONE, credit_balance=0)
    await make_cohort(h, "6e A", [student])
    answers = [await say(h, body) for body in ("Aide-moi", "Tu es là ?", "Allô ?")]
    [[first], [second], [third]] = answers
    assert first == second == third
    assert "enseignant" in first and "recharger" in first, first
    assert "ACHETER" not in first and "Mobile Money" not in first
    [bought] = await say(h, "ACHETER")
    assert "pas proposé" in bought and "enseignant" in bought, bought
    assert await say(h, "Et maintenant ?") == [first]  # never silence after ACHETER
    assert h.llm.requests == []
    outsider = await h.make_user("+2250700000502", credit_balance=0, language="en")
    [told] = await say(h, "Help me", phone="+2250700000502")
    assert "buying credits is not offered" in told and "BUY" not in told, told
    assert await say(h, "Hello?", phone="+2250700000502") == [told]
    assert outsider.id != student.id and h.llm.requests == []


async def test_the_days_cap_reached_says_tomorrow_and_buy_only_with_payments(make_harness: Any) -> None:
    h = await make_harness(CLASS_POOL_DAILY_CAP="10", PAYMENT_PROVIDER="local", PAYMENT_SECRET="local-secret")
    student = await h.make_user(PHONE, credit_balance=0, language="en")
    cohort = await make_cohort(h, "6e A", [student])
    assert (await console(h, "cohorts", "fund", "6e A", "50")).code == 0
    await ask(h)
    assert await balances(h, student.id, cohort) == (0, 40)
    [capped] = await say(h, "One more")
    assert "10 credits your class gives you each day" in capped and "tomorrow" in capped, capped
    assert "*BUY*" in capped
    assert await say(h, "Please") == [capped]
    [offers] = await say(h, "BUY")
    assert "FCFA" in offers, offers
    h.clock.advance(days=1)
    await ask(h)
    assert await balances(h, student.id, cohort) == (0, 30)


async def test_the_empty_pool_with_payments_offers_both(make_harness: Any) -> None:
    h = await make_harness(PAYMENT_PROVIDER="local", PAYMENT_SECRET="local-secret")
    student = await h.make_user(PHONE, credit_balance=0)
    await make_cohort(h, "6e A", [student])
    [told] = await say(h, "Aide-moi")
    assert "enseignant" in told and "*ACHETER*" in told and "Mobile Money" not in told, told
    assert await say(h, "Aide-moi encore") == [told]


async def snapshot(h: Harness) -> tuple[list[tuple[Any, ...]], list[tuple[str, int]]]:
    async with h.services.sessions() as db:
        pools = [(c.name, c.pool_balance) for c in await db.scalars(select(Cohort).order_by(Cohort.id))]
    return await ledger(h), pools


async def test_cohorts_fund_refuses_bad_input_and_changes_nothing(harness: Harness) -> None:
    h = harness
    await make_cohort(h, "6e A", [])
    before = await snapshot(h)
    unknown = await console(h, "cohorts", "fund", "6e Z", "100")
    assert unknown.code == 1 and unknown.err.strip().count("\n") == 0
    assert "aucune classe nommée '6e Z'" in unknown.err
    for bad in ("-5", "0", "abc", "1.5", "12e3", "2000000", ""):
        run = await console(h, "cohorts", "fund", "6e A", bad)
        assert run.code == 2 and run.out == "", (bad, run.out)
        assert run.err.strip().count("\n") == 0 and "CREDITS est un nombre entier" in run.err, (bad, run.err)
    assert await snapshot(h) == before
    assert (await console(h, "cohorts", "fund", "6e A", "1_000")).code == 0
    assert (await snapshot(h))[1] == [("6e A", 1000)]


async def test_an_admin_funds_a_class_on_its_page_once_per_form(harness: Harness) -> None:
    h = harness
    student = await h.make_user(PHONE, display_name="Awa Koné")
    cohort = await make_cohort(h, "6e A", [student])
    await make_operator(h, "admin@ecole.ci")
    await make_operator(h, "prof@ecole.ci", role="teacher", cohorts=[cohort])
    admin = await logged_in(h, "admin@ecole.ci")
    teacher = await logged_in(h, "prof@ecole.ci")
    try:
        status, page, _ = await admin.get("/admin/cohorts/6e%20A")
        assert status == 200 and 'id="fund"' in page and "0 crédits restants sur 0 versés" in page
        form = {"csrf_token": csrf_of(page), "nonce": _nonce(page), "credits": "500"}
        assert (await admin.post("/admin/cohorts/6e%20A/fund", {**form, "csrf_token": ""}))[0] == 403
        assert (await admin.post("/admin/cohorts/6e%20A/fund", {k: v for k, v in form.items()
                                                                 if k != "csrf_token"}))[0] == 403
        status, page, _ = await admin.post("/admin/cohorts/6e%20A/fund", form)
        assert status == 200 and "Crédits ajoutés" in page and "500 crédits restants sur 500" in page
        status, page, _ = await admin.post("/admin/cohorts/6e%20A/fund", form)  # the same form again
        assert status == 200 and "déjà été envoyé" in page and "500 crédits restants sur 500" in page
        for bad in ("-3", "0", "beaucoup", "1.5", "2000000"):
            status, page, _ = await admin.post("/admin/cohorts/6e%20A/fund",
                                               {**form, "nonce": _nonce(page), "credits": bad})
            assert status == 422 and "nombre entier" in page, bad
        await ask(h)  # Awa spends 10 credits of the pool
        status, page, _ = await teacher.get("/admin/cohorts/6e%20A")
        assert status == 200 and "490 crédits restants sur 500" in page and 'id="fund"' not in page
        assert "10 crédits utilisés ces 7 derniers jours : environ 343 jours restants" in page  # 490 / (10/7)
        [row] = re.findall(r'<table id="pool-use">.*?<tbody>\s*(<tr>.*?</tr>)', page, re.S)
        assert "Awa Koné" in row and row.count("<td>10</td>") == 2, row
        refused = await teacher.post("/admin/cohorts/6e%20A/fund",
                                     {"csrf_token": csrf_of(page), "nonce": "n" * 24, "credits": "100"})
        assert refused[0] == 404
        assert (await admin.post("/admin/cohorts/nowhere/fund", {**form, "nonce": "m" * 24}))[0] == 404
        async with h.services.sessions() as db:
            funds = [(e.cohort_id, e.delta, e.note) for e in await db.scalars(
                select(CreditEntry).where(CreditEntry.reason == "pool_fund"))]
        assert funds == [(cohort, 500, "dashboard admin@ecole.ci")]
    finally:
        await admin.close()
        await teacher.close()


def _nonce(page: str) -> str:
    found = re.search(r'name="nonce" value="([^"]+)"', page)
    assert found, "no nonce in the page"
    return found.group(1)


async def test_funding_from_the_dashboard_is_throttled(harness: Harness) -> None:
    h = harness
    await make_cohort(h, "6e A", [])
    await make_operator(h, "admin@ecole.ci")
    admin = await logged_in(h, "admin@ecole.ci")
    try:
        _status, page, _ = await admin.get("/admin/cohorts/6e%20A")
        csrf = csrf_of(page)
        for n in range(10):
            status, page, _ = await admin.post("/admin/cohorts/6e%20A/fund",
                                               {"csrf_token": csrf, "nonce": f"{n:024d}", "credits": "1"})
            assert status == 200 and "Crédits ajoutés" in page, n
        status, page, resp = await admin.post("/admin/cohorts/6e%20A/fund",
                                              {"csrf_token": csrf, "nonce": "x" * 24, "credits": "1"})
        assert status == 429 and int(resp.headers["Retry-After"]) > 0
        assert "Réessayez dans quelques minutes" in page
        async with h.services.sessions() as db:
            assert await db.scalar(select(Cohort.pool_balance)) == 10
    finally:
        await admin.close()
