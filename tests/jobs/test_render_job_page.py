"""A job's progress page in a real browser (Debian's Chromium, driven by Playwright) on a small
phone's screen: the timeline grows while the job records its steps, without a reload, and at the
end the answer and the file appear, and the file's link downloads it."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from playwright.async_api import Browser, ConsoleMessage, Page, async_playwright, expect

import tools
from bot import jobs
from tests.support.harness import Harness
from tests.support.job_page import done, made_file, make_job, page_path, step

CHROMIUM = "/usr/bin/chromium"
PHONE = "+2250700000311"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    # Missing Chromium is a failure (scripts/test installs it), never a skip.
    assert shutil.which("chromium") == CHROMIUM, "Chromium is missing: apt-get install chromium"
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                           args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            yield browser
        finally:
            await browser.close()


async def phone_page(browser: Browser, problems: list[str]) -> Page:
    context = await browser.new_context(viewport={"width": 360, "height": 740}, device_scale_factor=2,
                                        is_mobile=True, has_touch=True, accept_downloads=True)
    page = await context.new_page()

    def console(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            problems.append(message.text)

    page.on("console", console)
    page.on("pageerror", lambda error: problems.append(str(error)))
    return page


async def test_the_timeline_grows_live_and_the_file_arrives(harness: Harness, browser: Browser,
                                                            tmp_path: Path) -> None:
    h = harness
    user = await h.make_user(PHONE)
    job = await make_job(h, user, "Fais-moi un tableau Excel de mes ventes de mars, avec un graphique "
                                  "par semaine, puis envoie-le par e-mail à ma comptable.")
    await jobs.record_event(h.services, job.id, "status:running:1", "status", {"status": "running"})
    await step(h, job.id, 1, "call_s1", "web_search", duration_ms=3400)
    problems: list[str] = []
    page = await phone_page(browser, problems)
    await page.goto(h.base_url + page_path(h, job.id))
    lines = page.locator("#tl li")
    await expect(lines).to_have_count(1)
    await expect(lines.nth(0)).to_contain_text("Recherche sur le web")
    await expect(lines.nth(0)).to_contain_text("✅")
    await expect(lines.nth(0)).to_contain_text("3,4 s")
    await expect(page.locator("#st")).to_have_text("En cours")
    await page.evaluate("window.stillTheSamePage = true")

    # While the page is open, the job goes on: two more steps, the last one still running.
    await step(h, job.id, 2, "call_x1", "generate_xlsx", duration_ms=12_600)
    await step(h, job.id, 3, "call_e1", "send_email_to_user", status=None)
    await jobs.record_event(h.services, job.id, "3:call_e1:progress", "tool_progress",
                            {"name": "send_email_to_user", "note": "connexion au serveur"})
    await expect(lines).to_have_count(3)
    await expect(lines.nth(1)).to_contain_text("Génération du tableur Excel")
    await expect(lines.nth(1)).to_contain_text("13 s")
    await expect(lines.nth(2)).to_contain_text("⏳")
    await expect(lines.nth(2)).to_contain_text("connexion au serveur")
    await page.screenshot(path=str(tmp_path / "running.png"), full_page=True)
    await jobs.record_event(h.services, job.id, "3:call_e1:end", "tool_end",
                            {"name": "send_email_to_user", "status": "ok", "duration_ms": 65_000,
                             "label": jobs.step_label(tools.step_of("send_email_to_user"), "fr"),
                             "call_id": "call_e1"})
    await expect(lines.nth(2)).to_contain_text("1 min 05 s")

    data = b"PK\x03\x04 ventes de mars"
    row = await made_file(h, user, "Ventes mars 2026.xlsx", XLSX, data)
    answer = "Voici ton tableau des ventes de mars 📊\nJe l'ai aussi envoyé à ta comptable."
    await done(h, job.id, answer, [row])
    await expect(page.locator("#text")).to_contain_text("Je l'ai aussi envoyé à ta comptable.")
    link = page.locator("#files a")
    await expect(link).to_contain_text("Ventes mars 2026.xlsx")
    await expect(page.locator("#st")).to_have_text("Terminé")
    assert await page.evaluate("window.stillTheSamePage") is True  # grown in place, never reloaded
    assert await lines.count() == 3

    async with page.expect_download() as downloading:
        await link.click()
    download = await downloading.value
    saved = tmp_path / "downloaded.xlsx"
    await download.save_as(saved)
    assert saved.read_bytes() == data

    # Readable at 360 px: nothing wider than the screen, text not tiny.
    assert await page.evaluate("document.documentElement.scrollWidth") <= 360
    assert await page.evaluate("parseFloat(getComputedStyle(document.body).fontSize)") >= 16
    await page.screenshot(path=str(tmp_path / "done.png"), full_page=True)
    assert not problems, problems  # no script error, nothing refused by the CSP


async def test_the_page_carries_on_after_its_stream_ends_and_reconnects(
    make_harness: Callable[..., Awaitable[Harness]], browser: Browser,
) -> None:
    # Each stream ends after a second; the browser reconnects a tenth of a second later.
    h = await make_harness(SSE_MAX_SECONDS="1", SSE_RETRY_MS="100")
    user = await h.make_user(PHONE)
    job = await make_job(h, user, "Un rapport sur les volcans")
    await step(h, job.id, 1, "call_s1", "web_search")
    problems: list[str] = []
    page = await phone_page(browser, problems)
    streams: list[str] = []
    page.on("request", lambda request: streams.append(request.url) if "/events" in request.url else None)
    await page.goto(h.base_url + page_path(h, job.id))
    lines = page.locator("#tl li")
    await expect(lines).to_have_count(1)
    await page.evaluate("window.stillTheSamePage = true")
    for _ in range(200):  # the first stream ended and the browser opened the next one
        if len(streams) >= 2:
            break
        await asyncio.sleep(0.05)
    assert len(streams) >= 2, streams

    await step(h, job.id, 2, "call_x1", "generate_pdf")
    await expect(lines).to_have_count(2, timeout=15_000)
    await expect(lines.nth(1)).to_contain_text("✅")
    await done(h, job.id, "Voici ton rapport.", [])
    await expect(page.locator("#text")).to_contain_text("Voici ton rapport.", timeout=15_000)
    await expect(page.locator("#st")).to_have_text("Terminé")
    assert await lines.count() == 2  # nothing shown twice across the reconnects
    assert await page.evaluate("window.stillTheSamePage") is True
    assert not problems, problems


async def test_a_page_whose_stream_was_refused_opens_it_again_later(
    make_harness: Callable[..., Awaitable[Harness]], browser: Browser,
) -> None:
    # One stream per job, each for two seconds: the page's first one is refused (429), and the
    # browser would not reconnect by itself after that; the page's script opens it again later
    # (3 s here: after the held stream has ended).
    h = await make_harness(SSE_MAX_PER_JOB="1", SSE_MAX_SECONDS="2", SSE_REFUSED_RETRY_MS="3000")
    user = await h.make_user(PHONE)
    job = await make_job(h, user, "Un rapport sur les volcans")
    await step(h, job.id, 1, "call_s1", "web_search")
    async with h.session.get(h.base_url + page_path(h, job.id, events=True)) as held:
        assert held.status == 200
        problems: list[str] = []
        page = await phone_page(browser, problems)
        refused: list[int] = []
        page.on("response", lambda r: refused.append(r.status) if "/events" in r.url and r.status == 429
                else None)
        await page.goto(h.base_url + page_path(h, job.id))
        for _ in range(200):
            if refused:
                break
            await asyncio.sleep(0.05)
        assert refused == [429]
    await step(h, job.id, 2, "call_x1", "generate_pdf")  # the held stream has ended by now, or soon
    lines = page.locator("#tl li")
    await expect(lines).to_have_count(2, timeout=30_000)
    await done(h, job.id, "Voici ton rapport.", [])
    await expect(page.locator("#st")).to_have_text("Terminé", timeout=15_000)
    assert await lines.count() == 2
