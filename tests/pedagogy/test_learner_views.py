"""What the learner's rows show: PROGRES per canonical subject with its skills and the items due,
reported results apart, ENFANTS and the weekly summary naming the skills to work on; SMS lengths."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bot.channel import formatting
from bot.learning import SUBJECTS
from bot.learning.progress import send_weekly_summaries
from bot.storage.models import ParentLink
from tests.support.learner import add_item, add_mastery, add_results
from tests.support.pedagogy import PARENT, STUDENT, SUNDAY_SLOT, say

NOW = datetime(2026, 3, 5, 10, 0, tzinfo=UTC)  # a Thursday morning (Abidjan is UTC)


async def _student(h: Any, **fields: Any) -> int:
    h.clock.now = NOW
    user = await h.make_user(STUDENT, display_name="Awa", **fields)
    at = NOW - timedelta(hours=2)
    # Rows from before subjects were canonical: free text, one subject under four names.
    await add_results(h.services, user.id, [("maths", True), ("Mathématiques", True), ("math", False),
                                            ("MATHS ", True), ("Français", False)], at)
    # What the model only reported: kept apart, never in a percentage.
    await add_results(h.services, user.id, [("Maths", True), ("Maths", True), ("Maths", False)], at,
                      verified=False)
    await add_mastery(h.services, user.id, "Mathématiques", "les fractions", 0.97, 8, 8, at)
    await add_mastery(h.services, user.id, "Mathématiques", "multiplication", 0.7, 3, 2, at)
    await add_mastery(h.services, user.id, "Mathématiques", "géométrie", 0.2, 4, 1, at)
    await add_mastery(h.services, user.id, "Français", "accords", 0.3, 2, 0, at)
    await add_item(h.services, user.id, NOW - timedelta(days=1))
    await add_item(h.services, user.id, NOW - timedelta(minutes=5), skill="geometrie")
    await add_item(h.services, user.id, NOW + timedelta(days=3), last_correct=True)  # not due yet
    await add_item(h.services, user.id, None)  # asked, never answered
    return user.id


async def _link_parent(h: Any, student_id: int) -> None:
    parent = await h.make_user(PARENT, mode="pro", last_channel="sms", last_whatsapp_inbound_at=None)
    async with h.services.sessions() as db:
        db.add(ParentLink(student_id=student_id, parent_id=parent.id, status="confirmed",
                          confirmed_at=NOW - timedelta(days=30)))
        await db.commit()


async def test_progres_merges_aliases_shows_skills_and_keeps_reports_apart(harness: Any) -> None:
    h = harness
    await _student(h)
    calls = len(h.llm.requests)
    # One message: the summary is the chart's caption (tests/pedagogy/test_progress_chart.py).
    [reply] = await say(h, STUDENT, "PROGRES")
    [sent] = h.twilio.to(f"whatsapp:{STUDENT}")[-1:]
    assert sent.get("MediaUrl") and sent["Body"] == reply
    lines = reply.splitlines()
    maths = [line for line in lines if line.startswith("• Maths")]
    assert len(maths) == 1, reply  # maths, Mathématiques, math, MATHS: one subject
    # 4 checked answers, 3 right; the 3 reported results are not in the percentage.
    assert maths[0].startswith("• Maths : 4 questions, 75 % justes"), reply
    block = "\n".join(lines[lines.index(maths[0]):])
    assert "maîtrisé : les fractions (8 réponses)" in block
    assert "en cours : multiplication (3 réponses)" in block
    assert "à revoir : géométrie (4 réponses)" in block
    assert "déclarés, non vérifiés : 3 exercices, 2 réussis" in block
    assert "• Français : 1 question, 0 % justes" in reply and "à revoir : accords (2 réponses)" in reply
    assert "2 questions à revoir — REVISION pour réviser" in reply  # the two due, not the later, not the new
    assert len(h.llm.requests) == calls  # no model call


async def test_progress_in_english_and_by_sms(make_harness: Any) -> None:
    h = await make_harness()
    await _student(h, language="en")
    [reply] = await say(h, STUDENT, "PROGRESS")  # the chart's caption
    assert "• Maths: 4 questions, 75% right" in reply and "mastered: les fractions (8 answers)" in reply
    assert "reported, not checked: 3 exercises, 2 done right" in reply
    assert "2 questions to review — send REVIEW" in reply
    sms = "\n".join(await say(h, STUDENT, "PROGRESS", channel="sms"))  # its SMS parts
    assert formatting.is_gsm7(sms) and "7 days" not in sms  # compact by SMS: no weekly trend


async def test_enfants_names_the_skills_to_work_on_from_checked_answers(harness: Any) -> None:
    h = harness
    student_id = await _student(h)
    await _link_parent(h, student_id)
    [reply] = await say(h, PARENT, "ENFANTS", channel="sms")
    assert "Maths : 4 questions, 75 % justes" in reply
    assert "déclarés, non vérifiés : 3 exercices, 2 réussis" in reply  # apart
    # The weakest first, only skills « à revoir »: not multiplication (in progress), not fractions.
    assert "Awa a du mal avec géométrie et accords." in reply, reply
    assert "REVISION" not in reply  # a parent has nothing to review
    assert formatting.is_gsm7(reply)


async def test_the_weekly_summary_names_struggles_and_leaves_reports_out(harness: Any) -> None:
    h = harness
    student_id = await _student(h)
    await _link_parent(h, student_id)
    h.clock.now = SUNDAY_SLOT + timedelta(minutes=5)
    assert await send_weekly_summaries(h.services, h.clock()) == 1
    [summary] = await h.texts_to(PARENT)
    assert "Awa a répondu à 5 questions, 60 % justes" in summary, summary  # checked answers only
    assert "Maths 3/4, Francais 0/1." in summary  # GSM-7: no ç
    assert "Awa a du mal avec géométrie et accords." in summary
    assert formatting.is_gsm7(summary) and formatting.sms_segments(summary)[1] <= 3, summary


async def test_worst_case_sms_lengths_stay_sane(harness: Any) -> None:
    """Every subject, many skills with long labels, a long name: the summary and the SMS replies
    stay a few segments (the rest is counted, « +3 autres »)."""
    h = harness
    h.clock.now = NOW
    user = await h.make_user(STUDENT, display_name="Awa-Marie-Christelle Kouassi", last_channel="sms")
    at = NOW - timedelta(hours=2)
    for subject in SUBJECTS:
        await add_results(h.services, user.id, [(subject, True), (subject, False)] * 3, at)
        await add_results(h.services, user.id, [(subject, True)], at, verified=False)
        for n, p in enumerate((0.99, 0.98, 0.97, 0.6, 0.7, 0.8, 0.1, 0.2, 0.3)):
            label = f"compétence numéro {n} " + "très longue " * 15
            await add_mastery(h.services, user.id, subject, label, p, 10 + n, 5, at, skill=f"s{n}")
    for _ in range(12):
        await add_item(h.services, user.id, NOW - timedelta(days=1))
    await _link_parent(h, user.id)
    progress = "".join(await say(h, STUDENT, "PROGRES", channel="sms"))  # its SMS parts, if split
    children = "".join(await say(h, PARENT, "ENFANTS", channel="sms"))
    h.clock.now = SUNDAY_SLOT + timedelta(minutes=5)
    before = len(await h.texts_to(PARENT))
    assert await send_weekly_summaries(h.services, h.clock()) == 1
    summary = "".join((await h.texts_to(PARENT))[before:])
    for text, most in ((progress, 10), (children, 6), (summary, 4)):
        encoding, segments = formatting.sms_segments(text)
        assert encoding == "GSM-7" and segments <= most, (segments, text)
    assert f"(+{len(SUBJECTS) - 3} autres matières)" in progress and "+1 autre" in progress
