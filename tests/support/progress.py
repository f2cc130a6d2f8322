"""The progress chart and page tests' student: checked answers spread over the last weeks, skills
in three subjects (one label hostile, one with accents), a parent linked to them; and the page's
link read out of an SMS."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from bot.storage.models import ParentLink, User
from tests.support.learner import add_item, add_mastery, add_results

NOW = datetime(2026, 3, 5, 10, 0, tzinfo=UTC)  # a Thursday (Abidjan is UTC)
HOSTILE = '<script>alert("x")</script> $x^2$'  # a label as a model might write it: escaped, not maths
LINK = re.compile(r"(https?://\S+/progress/\d+\?sig=\S+)$")
# Week by week, the oldest first: (right, wrong) checked answers; the last is the last 7 days.
WEEKLY = [(0, 0), (2, 1), (4, 2), (0, 0), (6, 3), (5, 5), (1, 0), (7, 2)]


async def progress_student(h: Any, phone: str, name: str | None = "Awa Kouassi", **fields: Any) -> User:
    h.clock.now = NOW
    user = await h.make_user(phone, display_name=name, **fields)
    for n, (right, wrong) in enumerate(WEEKLY):
        at = NOW - timedelta(days=7 * (len(WEEKLY) - 1 - n) + 2)
        rows = [("Mathématiques", True)] * right + [("Français", False)] * wrong
        await add_results(h.services, user.id, rows, at)
    await add_results(h.services, user.id, [("Maths", True)] * 3, NOW - timedelta(days=1), verified=False)
    at = NOW - timedelta(hours=3)
    await add_mastery(h.services, user.id, "Mathématiques", "les fractions", 0.97, 12, 11, at)
    await add_mastery(h.services, user.id, "Mathématiques", "géométrie : théorème de Thalès", 0.2, 6, 2, at)
    await add_mastery(h.services, user.id, "Français", "accords du participe passé", 0.62, 9, 6, at)
    await add_mastery(h.services, user.id, "SVT", HOSTILE, 0.4, 3, 1, at, skill="hostile")
    await add_item(h.services, user.id, NOW - timedelta(days=1))
    return user


async def link_parent(h: Any, student_id: int, parent: User) -> None:
    async with h.services.sessions() as db:
        db.add(ParentLink(student_id=student_id, parent_id=parent.id, status="confirmed",
                          confirmed_at=NOW - timedelta(days=30)))
        await db.commit()


def page_link(text: str) -> str:
    """The progress page's link that ends `text` (an SMS), as a path with its query."""
    found = LINK.search(text.strip())
    assert found, f"no progress link at the end of {text!r}"
    url = urlsplit(found.group(1))
    return f"{url.path}?{url.query}"
