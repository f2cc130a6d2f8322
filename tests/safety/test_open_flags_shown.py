"""The adults who need to know see the open flags: the teachers' weekly e-mail (through the real
SMTP server) and the dashboard's overview show how many flags of the reader's classes are open and
since when, never the words; an admin's overview counts every open flag."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from bot.learning.progress import latest_summary_slot
from bot.safety import OpenFlags, how_long, open_line
from bot.storage.models import SafetyFlag
from tests.support.admin import logged_in, make_cohort, make_operator
from tests.support.harness import Harness

WORDS = ("je veux plus vivre", "on se moque de moi", "il me frappe", "personne ne m'aime")


def test_the_line_says_how_many_and_since_when() -> None:
    now = datetime(2026, 3, 9, 12, 0)
    two = OpenFlags(2, now - timedelta(days=3, hours=2))
    assert open_line(two, now, "fr") == "2 alertes ouvertes, la plus ancienne il y a 3 jours"
    assert open_line(two, now, "en") == "2 open alerts, the oldest raised 3 days ago"
    one = OpenFlags(1, now - timedelta(minutes=20))
    assert open_line(one, now, "fr") == "1 alerte ouverte, il y a 20 minutes"
    assert open_line(OpenFlags(1, now - timedelta(hours=1)), now, "en") == "1 open alert, raised 1 hour ago"
    assert open_line(OpenFlags(0, None), now, "fr") == ""
    # Hours up to two days: « 1 jour » would hide that a flag has been open for 47 hours.
    assert how_long(47 * 3600, "fr") == "47 heures" and how_long(48 * 3600, "en") == "2 days"
    assert how_long(5, "fr") == "1 minute"


async def flag(h: Harness, user_id: int, excerpt: str, at: datetime, *, acknowledged: bool = False) -> None:
    async with h.services.sessions() as db, db.begin():
        db.add(SafetyFlag(user_id=user_id, category="self_harm", source="phrases", excerpt=excerpt,
                          created_at=at, acknowledged_at=at + timedelta(hours=1) if acknowledged else None))


async def a_school(h: Harness, now: datetime) -> None:
    """« 6e A » (the teacher's) with two open flags, the oldest 3 days old, and one acknowledged;
    « 6e B » (not theirs) with one open 10 days; « 6e C » (another teacher's) with none."""
    awa, yao, marc, ines = [await h.make_user(f"+22507000003{n:02d}", display_name=name)
                            for n, name in enumerate(("Awa", "Yao", "Marc", "Ines"))]
    mine = await make_cohort(h, "6e A", [awa, yao])
    await make_cohort(h, "6e B", [marc])
    quiet = await make_cohort(h, "6e C", [ines])
    await flag(h, awa.id, WORDS[0], now - timedelta(days=3))
    await flag(h, yao.id, WORDS[1], now - timedelta(hours=5))
    await flag(h, yao.id, WORDS[3], now - timedelta(days=20), acknowledged=True)
    await flag(h, marc.id, WORDS[2], now - timedelta(days=10))
    await make_operator(h, "prof@ecole.ci", role="teacher", cohorts=[mine])
    await make_operator(h, "calme@ecole.ci", role="teacher", cohorts=[quiet])
    await make_operator(h, "admin@ecole.ci")


async def test_the_weekly_email_counts_the_classes_open_flags(make_harness: Any, smtp_server: Any) -> None:
    smtp = smtp_server()
    h: Harness = await make_harness(**smtp.env(TEACHER_SUMMARY_WEEKDAY="0", TEACHER_SUMMARY_HOUR="7"))
    now = latest_summary_slot(h.clock(), 0, 7, h.settings.default_timezone) + timedelta(minutes=5)
    h.clock.now = now - timedelta(hours=1)  # the teachers exist before the week's slot
    await a_school(h, now)
    h.clock.now = now
    await h.run_jobs("teacher_weekly_summary")
    mails = {r.rcpt_tos[0]: r.message.get_body(("plain",)).get_content() for r in smtp.received}
    assert sorted(mails) == ["calme@ecole.ci", "prof@ecole.ci"]
    text = mails["prof@ecole.ci"]
    line = "- ⚠ 2 alertes ouvertes, la plus ancienne il y a 3 jours : à traiter sur le tableau de bord"
    lines = text.splitlines()
    assert lines[lines.index("Classe 6e A — 2 élèves") + 1] == line, text
    assert "10 jours" not in text and "6e B" not in text  # not their class
    assert not any(words in text for words in WORDS)
    assert "ouverte" not in mails["calme@ecole.ci"]


async def test_the_overview_counts_the_open_flags_a_viewer_may_see(harness: Harness) -> None:
    h = harness
    await a_school(h, h.clock())
    for email, line in (("prof@ecole.ci", "2 alertes ouvertes, la plus ancienne il y a 3 jours"),
                        ("admin@ecole.ci", "3 alertes ouvertes, la plus ancienne il y a 10 jours"),
                        ("calme@ecole.ci", None)):
        viewer = await logged_in(h, email)
        try:
            status, page, _ = await viewer.get("/admin/")
        finally:
            await viewer.close()
        assert status == 200
        if line is None:
            assert 'id="open-flags"' not in page and "ouverte" not in page
        else:
            shown = page.split('id="open-flags"')[1].split("</p>")[0]
            assert line in shown and 'href="/admin/flags"' in shown, shown
        assert not any(words in page for words in WORDS)
