"""The progress page in a real browser (Debian's Chromium, driven by Playwright) on a small phone
(360 px) and a laptop (1280 px): nothing wider than the phone's screen, the charts drawn with their
numbers, chart and table side by side on the wide screen, nothing the CSP had to block, and no
serious or critical axe-core finding. Screenshots are kept for a person to look at."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, ConsoleMessage, async_playwright, expect

from bot.channel.links import progress_signature
from tests.support.axe import assert_accessible
from tests.support.pedagogy import STUDENT
from tests.support.progress import progress_student

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("RENDER_OUTPUT_DIR", "/tmp/deblo-render"))
SCREENS = {360: {"height": 740, "device_scale_factor": 2, "is_mobile": True, "has_touch": True},
           1280: {"height": 800, "device_scale_factor": 1, "is_mobile": False, "has_touch": False}}


async def _look(browser: Browser, url: str, width: int, shots: list[Path]) -> None:
    options = SCREENS[width]
    context = await browser.new_context(viewport={"width": width, "height": int(options["height"])},
                                        device_scale_factor=options["device_scale_factor"],
                                        is_mobile=bool(options["is_mobile"]),
                                        has_touch=bool(options["has_touch"]))
    page = await context.new_page()
    problems: list[str] = []

    def console(message: ConsoleMessage) -> None:
        # A CSP violation is reported here; the browser's own asking for /favicon.ico is not the page's.
        favicon = message.location.get("url", "").endswith("/favicon.ico")
        if message.type in ("error", "warning") and not favicon:
            problems.append(f"{message.text} ({message.location.get('url')})")

    page.on("console", console)
    page.on("pageerror", lambda error: problems.append(str(error)))
    try:
        response = await page.goto(url)
        assert response is not None and response.status == 200
        await expect(page.locator("h1")).to_have_text("Progrès de Awa Kouassi")
        await expect(page.locator("svg text", has_text="97 % maîtrisé")).to_have_count(1)
        await expect(page.locator("svg text", has_text="7/9")).to_have_count(1)
        # Against the screen's width, not innerWidth: a phone's browser widens its layout to the content.
        overflow = await page.evaluate(f"document.documentElement.scrollWidth - {width}")
        assert overflow <= 0, f"{overflow}px wider than the screen at {width}px"
        boxes = await page.evaluate("""() => [...document.querySelectorAll('main svg, main table')]
            .map(e => { const r = e.getBoundingClientRect();
                        return [e.tagName, r.left, r.right, r.top]; })""")
        assert all(left >= 0 and right <= width + 0.5 for _, left, right, _ in boxes), boxes
        charts = [b for b in boxes if b[0].lower() == "svg"]
        tables = [b for b in boxes if b[0] == "TABLE"]
        assert len(charts) == 2 and len(tables) == 3
        skills_chart, skills_table = charts[0], tables[1]
        if width >= 1280:  # side by side
            assert skills_table[1] >= skills_chart[2] and abs(skills_table[3] - skills_chart[3]) < 40, boxes
        else:  # one under the other, each the screen's width
            assert skills_table[3] > skills_chart[3], boxes
            assert skills_chart[2] - skills_chart[1] > width * 0.8, boxes
        shot = ARTIFACTS / f"progress-page-{width}.png"
        await page.screenshot(path=str(shot), full_page=True)
        shots.append(shot)
        await assert_accessible(page, f"the progress page at {width}px")
        assert problems == [], problems  # the CSP blocked nothing the page needs
    finally:
        await context.close()


async def test_the_page_at_360_and_1280_px(harness: Any, tmp_path: Path) -> None:
    h = harness
    awa = await progress_student(h, STUDENT)
    sig = progress_signature(h.settings, awa.id, now=h.clock().timestamp())
    url = f"{h.base_url}/progress/{awa.id}?sig={sig}"
    # Missing Chromium is a failure (scripts/test installs it), never a skip.
    assert shutil.which("chromium") == CHROMIUM, "Chromium is missing: apt-get install chromium"
    shots: list[Path] = []
    await asyncio.to_thread(ARTIFACTS.mkdir, parents=True, exist_ok=True)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                           args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            for width in SCREENS:
                await _look(browser, url, width, shots)
        finally:
            await browser.close()
    for shot in shots:  # also beside the test's other files
        shutil.copy(shot, tmp_path / shot.name)
    assert [s.stat().st_size > 10_000 for s in shots] == [True, True]
