"""Long work stays findable: the ⏳ note and a job's answer carry the link to its live page (which
opens), and STATUT shows the last job that ended, with its files and link, for a day."""

from __future__ import annotations

import re
from typing import Any

from bot import jobs
from bot.channel import formatting
from bot.channel.links import job_page_url
from handlers.turn import LONG_WORK_NOTE, QUEUED_NOTE
from tests.support.background_turns import job_link, long_harness, open_link, script_steps, unlinked, wait_job
from tests.support.background_turns import jobs as job_rows
from tests.support.harness import Harness
from tests.support.job_page import done, made_file, make_job

PHONE = "+2250700000241"
ANSWER = "Voici le bilan complet."


async def say(h: Harness, body: str, channel: str = "whatsapp") -> list[str]:
    before = len(await h.texts_to(PHONE))
    status, _ = await h.inbound(PHONE, body, channel=channel)
    assert status == 200
    await h.settle()
    return (await h.texts_to(PHONE))[before:]


def job_id_of(link: str) -> int:
    found = re.search(r"/jobs/(\d+)\?sig=", link)
    assert found is not None, link
    return int(found.group(1))


async def test_the_note_sent_while_a_tool_works_links_the_page_the_answer_too(make_harness: Any) -> None:
    h = await long_harness(make_harness)
    await h.make_user(PHONE, mode="pro")
    script_steps(h, 2, 1.6, answer=ANSWER)  # the first search outlasts the 1 s budget: told mid-tool
    await h.inbound(PHONE, "Recherche les normes SYSCOHADA et fais le bilan")
    await h.settle()
    job = await wait_job(h, "completed")
    note, *_, final = await h.texts_to(PHONE)
    assert unlinked([note, final]) == [LONG_WORK_NOTE[0], ANSWER]
    assert note.endswith(f"\n🔗 En direct : {job_link(note)}")
    note_link, final_link = job_link(note), job_link(final)
    assert note_link is not None and final_link is not None
    # The row made for the note's link is the job itself: one job, one page.
    assert job_id_of(note_link) == job_id_of(final_link) == job.id
    assert [j.id for j in await job_rows(h)] == [job.id]
    status, page = await open_link(h, note_link)
    assert status == 200 and "Recherche les normes SYSCOHADA" in page and ANSWER in page
    assert (await open_link(h, final_link))[0] == 200
    assert job.result_text == ANSWER  # the page and the history keep the answer without the link


async def test_a_turn_promoted_at_once_links_its_page_in_the_note(make_harness: Any) -> None:
    h = await long_harness(make_harness, turn_s="60")
    await h.make_user(PHONE, mode="pro", language="en")
    script_steps(h, 1, 0.1, answer="Ready.")
    await h.inbound(PHONE, "Do the balance sheet in the background")
    await h.settle()
    job = await wait_job(h, "completed")
    note, final = await h.texts_to(PHONE)
    assert unlinked([note, final]) == [LONG_WORK_NOTE[1], "Ready."]
    assert note.split("\n")[-1].startswith("🔗 Live: ")
    link = job_link(note)
    assert link is not None and job_id_of(link) == job.id and job_link(final) is not None
    status, page = await open_link(h, link)
    assert status == 200 and "Do the balance sheet" in page


async def test_by_sms_the_note_with_its_link_stays_within_two_segments(make_harness: Any) -> None:
    h = await long_harness(make_harness)
    await h.make_user(PHONE, mode="pro", last_channel="sms")
    script_steps(h, 2, 1.6, answer=ANSWER)
    await h.inbound(PHONE, "Fais le bilan", channel="sms")
    await h.settle()
    await wait_job(h, "completed")
    note = (await h.texts_to(PHONE))[0]
    [link] = re.findall(r"https?://\S+", note)
    assert note.endswith(f"En direct : {link}") and job_id_of(link) > 0, note
    assert (await open_link(h, link))[0] == 200
    encoding, segments = formatting.sms_segments(note)
    assert encoding == "GSM-7" and segments <= 2, (segments, note)
    # The longer note (queued behind another job), in both languages, with a longer public address
    # and a seven-digit job id, still fits two GSM-7 segments.
    url = job_page_url(h.settings, 1234567).replace(h.settings.public_base_url,
                                                    "https://deblo-bot.example.africa")
    for lang, texts in (("fr", QUEUED_NOTE), ("en", QUEUED_NOTE), ("fr", LONG_WORK_NOTE)):
        text = formatting.to_sms(f"{texts[1 if lang == 'en' else 0]}\n{jobs.live_line(url, lang)}")
        encoding, segments = formatting.sms_segments(text)
        assert encoding == "GSM-7" and segments <= 2, (segments, text)


async def test_statut_after_the_job_ended_shows_it_for_a_day(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    job = await make_job(h, user, "Un bilan en Excel et en PDF")
    sheet = await made_file(h, user, "Bilan 2025.xlsx",
                            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", b"xlsx")
    pdf = await made_file(h, user, "Bilan 2025.pdf", "application/pdf", b"%PDF-1.4")
    h.clock.advance(seconds=75)
    await done(h, job.id, ANSWER, [sheet, pdf])
    h.clock.advance(hours=23, minutes=59)
    [reply] = await say(h, "STATUT")
    lines = reply.split("\n")
    assert lines[0] == "✅ Terminé."
    assert "⏱️ Durée : 1 min 15 s" in lines
    assert "📎 Fichiers : Bilan 2025.xlsx, Bilan 2025.pdf" in lines
    link = job_link(reply)
    assert link is not None and job_id_of(link) == job.id
    status, page = await open_link(h, link)
    assert status == 200 and "Bilan 2025.pdf" in page
    h.clock.advance(minutes=2)  # a day and a minute after it ended: nothing to show any more
    assert await say(h, "STATUT") == ["Aucun travail en cours."]
    assert h.llm.requests == []


async def test_statut_shows_the_job_that_ended_last_in_english_and_by_sms(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, language="en", last_channel="sms")
    first = await make_job(h, user, "First")
    await done(h, first.id, "First done.", [])
    second = await make_job(h, user, "Second")
    h.clock.advance(minutes=1)
    await done(h, second.id, "", [], status=jobs.FAILED)
    [reply] = await say(h, "status", channel="sms")
    assert reply.startswith("Failed.") and formatting.is_gsm7(reply), reply
    assert f"/jobs/{second.id}?sig=" in reply and "Files" not in reply
    # A job running again is what STATUT is about.
    running = await make_job(h, user, "Third")
    [reply] = await say(h, "STATUS", channel="sms")
    assert reply.startswith("Now:") and f"/jobs/{running.id}?sig=" in reply, reply
    assert h.llm.requests == []
