"""Accessibility checks of a page open in Playwright, by axe-core (Deque's engine, the npm package).

axe-core 4.14.1 is vendored under tests/support/vendor/axe-core/ (MPL-2.0, its README says where it
comes from), so the check needs no network; its sha256 is checked before each use, and a missing or
changed file fails the test (never a skip).

    from tests.support.axe import assert_accessible
    await page.goto(url)
    await assert_accessible(page, "progress page at 360 px")   # raises on serious or critical findings

`audit(page)` returns every finding (rule, impact, help, the elements) for a test that wants the
minor ones too. The script is injected through Playwright's evaluate, which a page's CSP does not
block, so the page is checked with its real headers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from playwright.async_api import Page

AXE_VERSION = "4.14.1"
AXE_JS = Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js"
AXE_SHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
BLOCKING = frozenset({"serious", "critical"})
# WCAG 2.x A and AA, and axe's best practices (headings, landmarks…).
DEFAULT_TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice")

_RUN = """async (tags) => {
  const result = await axe.run(document, {runOnly: {type: "tag", values: tags}, resultTypes: ["violations"]});
  return result.violations.map(v => ({
    rule: v.id, impact: v.impact || "", help: v.help,
    nodes: v.nodes.map(n => n.target.join(" ") + " → " + n.html.slice(0, 160)),
  }));
}"""


@dataclass(frozen=True)
class Finding:
    rule: str  # axe's rule id, e.g. "color-contrast"
    impact: str  # minor | moderate | serious | critical
    help: str
    nodes: tuple[str, ...]  # each element as "selector → its HTML (cut)"

    def __str__(self) -> str:
        where = "\n    ".join(self.nodes[:5])
        return f"[{self.impact}] {self.rule}: {self.help}\n    {where}"


@cache
def axe_source() -> str:
    """The vendored axe.min.js, checked; an AssertionError that says how to fix it otherwise."""
    if not AXE_JS.is_file():
        raise AssertionError(f"axe-core is missing at {AXE_JS}: see tests/support/vendor/axe-core/README.md")
    data = AXE_JS.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != AXE_SHA256:
        raise AssertionError(f"{AXE_JS} is not axe-core {AXE_VERSION} (sha256 {digest}): fetch it again "
                             "as tests/support/vendor/axe-core/README.md says")
    return data.decode()


async def audit(page: Page, tags: tuple[str, ...] = DEFAULT_TAGS) -> list[Finding]:
    """Every axe-core finding on the page as it is now (load the page and wait for it first)."""
    if not await page.evaluate("typeof window.axe === 'object'"):
        await page.evaluate(axe_source())
    found: list[dict[str, Any]] = await page.evaluate(_RUN, list(tags))
    return [Finding(rule=f["rule"], impact=f["impact"], help=f["help"], nodes=tuple(f["nodes"]))
            for f in found]


async def assert_accessible(page: Page, label: str, tags: tuple[str, ...] = DEFAULT_TAGS) -> list[Finding]:
    """Fails with each serious or critical finding listed; returns the lesser ones (minor, moderate)."""
    findings = await audit(page, tags)
    blocking = [f for f in findings if f.impact in BLOCKING]
    assert not blocking, f"axe-core {AXE_VERSION} on {label}:\n" + "\n".join(str(f) for f in blocking)
    return findings
