"""The dashboard as a person sees it: Debian's Chromium (Playwright) logs in through the form, opens
each page at 360 px and 1280 px and keeps a screenshot of each (RENDER_OUTPUT_DIR/admin/), with a
class of 30 students × 12 skills; axe-core finds nothing serious or critical on any page."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from playwright.async_api import Browser, FilePayload, Page, async_playwright, expect

from bot.storage.models import Conversation, InboundMessage, Message, OutboundMessage
from tests.support.admin import (
    PASSWORD,
    add_flag,
    add_result,
    add_retaught,
    make_cohort,
    make_operator,
    set_mastery,
)
from tests.support.axe import assert_accessible
from tests.support.harness import Harness
from tests.support.render import OUTPUT_DIR

CHROMIUM = "/usr/bin/chromium"
SKILLS = ["Fractions", "Décimaux", "Proportionnalité", "Équations", "Géométrie plane", "Périmètres",
          "Aires", "Conjugaison", "Accords du participe passé", "Lecture", "Orthographe", "Vocabulaire"]
WIDTHS = (360, 1280)
ITEMS = ("Question;Choix 1;Choix 2;Bonne réponse;Matière;Notion\r\n"
         "Combien font 3 × 4 ?;7;12;2;Maths;Fractions\r\n").encode("cp1252")



@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    assert shutil.which("chromium") == CHROMIUM, "Chromium is missing: apt-get install chromium"
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                           args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            yield browser
        finally:
            await browser.close()


async def _seed_class(h: Harness) -> int:
    now = h.clock()
    students = []
    for n in range(30):
        quiet = n % 7 == 0
        user = await h.make_user(f"+22507000005{n:02d}", display_name=f"Élève {n + 1:02d} Kouadio",
                                 school_level="CM2", last_inbound_at=now - timedelta(days=10 if quiet else 1))
        students.append(user)
        await set_mastery(h, user.id, {skill: ((n * 7 + k * 13) % 100) / 100
                                       for k, skill in enumerate(SKILLS)})
    for week in range(12):
        at = now - timedelta(weeks=week, days=1)
        await add_result(h, students[0].id, SKILLS[week % 12], week % 3 != 0, at)
    for n in (0, 4, 11, 29):  # questions taught again: « ↻ » in their cells
        await add_retaught(h, students[n].id, SKILLS[n % 12], 1 + n % 3)
    await add_flag(h, students[3].id, "personne ne m'aime")
    async with h.services.sessions() as db, db.begin():  # what the flag's page shows
        conversation = Conversation(user_id=students[3].id, created_at=now)
        db.add(conversation)
        await db.flush()
        for minutes, role, content in ((9, "user", "personne ne m'aime " + "vraiment" * 12),
                                       (8, "assistant", "Merci de me l'avoir dit. " * 8), (7, "user", "ok")):
            db.add(Message(conversation_id=conversation.id, role=role, content=content,
                           created_at=now - timedelta(minutes=minutes)))
    async with h.services.sessions() as db, db.begin():  # a month of messages for the overview's chart
        for n in range(120):
            user, at = students[n % 30], now - timedelta(hours=n * 5)
            db.add(InboundMessage(message_sid=f"SMbrowser{n}", user_id=user.id, channel="whatsapp",
                                  from_addr="x", status="done", created_at=at))
            db.add(OutboundMessage(user_id=user.id, channel="whatsapp", to_addr="x", sid=f"SMout{n}",
                                   status="delivered", created_at=at, cost_micro=9000))
    await make_cohort(h, "CM2 B", students)
    return students[0].id


async def _page(browser: Browser, width: int) -> Page:
    # The pages' CSP forbids every script: axe is injected past it, as an extension would be.
    context = await browser.new_context(viewport={"width": width, "height": 800}, bypass_csp=True,
                                        locale="fr-FR")
    return await context.new_page()


async def _look(page: Page, name: str, width: int) -> None:
    out = OUTPUT_DIR / "admin"
    out.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(out / f"{name}-{width}.png"), full_page=True)
    # Nothing wider than the screen but the regions that scroll on their own (the wide tables).
    overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{name} at {width} px is {overflow} px too wide"
    await assert_accessible(page, f"{name} at {width} px")


async def test_the_dashboard_reads_well_at_360_and_1280_px(harness: Harness, browser: Browser) -> None:
    h = harness
    first = await _seed_class(h)
    await make_operator(h, "admin@ecole.ci")
    for width in WIDTHS:
        page = await _page(browser, width)
        await page.goto(h.base_url + "/admin/")
        assert page.url.endswith("/admin/login")
        await _look(page, "login", width)
        await page.get_by_label("Adresse e-mail").fill("admin@ecole.ci")
        await page.get_by_label("Mot de passe").fill(PASSWORD)
        await page.get_by_role("button", name="Se connecter").click()
        await expect(page.locator("#active-30")).to_have_text("30")
        await expect(page.locator("#cost-month td").nth(0)).to_have_text("30")  # the cost meter's learners
        await _look(page, "overview", width)

        await page.get_by_role("link", name="CM2 B").click()
        heat = page.locator("#heatmap")
        await expect(heat.locator("tbody tr")).to_have_count(30)
        await expect(heat.locator("thead th")).to_have_count(13)
        cell = heat.locator("tbody tr").nth(0).locator("td").nth(0)
        await expect(cell).to_be_visible()
        assert (await cell.inner_text()).strip().isdigit()
        await expect(page.locator("#at-risk li")).to_have_count(5)
        await expect(heat.locator("td .rt")).to_have_count(4)
        marked = heat.locator("tbody tr").nth(0).locator("td:has(.rt)")  # the first student's Fractions
        await expect(marked.locator(".rt")).to_have_text("↻1")
        box, mark = await marked.bounding_box(), await marked.locator(".rt").bounding_box()
        assert box is not None and mark is not None and mark["x"] + mark["width"] <= box["x"] + box["width"]
        if width >= 1280:  # on a wide screen the whole heatmap shows, its last column too
            last = await heat.locator("thead th").last.bounding_box()
            assert last is not None and last["x"] + last["width"] <= width
        await _look(page, "cohort", width)
        # A teacher's questions sent from the class page; the page that answers.
        await page.get_by_label("Fichier de questions (CSV ou XLSX)").set_input_files(
            files=FilePayload(name="questions.csv", mimeType="text/csv", buffer=ITEMS))
        await page.get_by_role("button", name="Ajouter les questions").click()
        first_time = width == WIDTHS[0]
        added = f"{int(first_time)} question(s) ajoutée(s), {int(not first_time)} déjà là."
        await expect(page.locator("#added")).to_have_text(added)
        await _look(page, "items", width)

        await page.goto(h.base_url + f"/admin/students/{first}")
        await expect(page.locator("#skills tbody tr")).to_have_count(12)
        await expect(page.locator("#weeks tbody tr")).to_have_count(12)
        await _look(page, "student", width)

        await page.goto(h.base_url + "/admin/flags")
        await expect(page.locator("#flags li")).to_have_count(1)
        await _look(page, "flags", width)

        await page.get_by_role("link", name="Ouvrir").click()
        await expect(page.locator("#lines li")).to_have_count(3)
        await expect(page.get_by_label("Message", exact=True)).to_be_visible()
        await _look(page, "flag", width)
        await page.context.close()
