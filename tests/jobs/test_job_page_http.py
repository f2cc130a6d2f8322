"""A job's progress page over plain HTTP: who may open it, what it shows, and its event stream."""

from __future__ import annotations

import asyncio
import re
import time

from bot import jobs
from bot.channel.links import job_signature
from tests.support.harness import Harness
from tests.support.job_page import done, finish_job, made_file, make_job, page_path, read_events, step

PHONE = "+2250700000301"
OTHER = "+2250700000302"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


async def test_a_bad_expired_or_other_jobs_sig_is_refused(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    mine, other = await make_job(h, user, "Mon bilan"), await make_job(h, user, "Autre chose")
    good = job_signature(h.settings, mine.id)
    expired = job_signature(h.settings, mine.id, now=time.time() - 3600, ttl_s=60)
    tampered = good[:-2] + ("AA" if not good.endswith("AA") else "BB")
    later = f"{int(good.split('.')[0]) + 1000}.{good.split('.')[1]}"  # a longer life, same mac
    for events in (False, True):
        for sig in (expired, tampered, later, job_signature(h.settings, other.id), "", "abc"):
            status, headers, body = await h.get(page_path(h, mine.id, sig=sig, events=events))
            assert status == 403, (sig, events)
            assert "STATUT" in body.decode() and "Mon bilan" not in body.decode()
            assert headers["Cache-Control"] == "no-store"
        async with h.session.get(h.base_url + page_path(h, mine.id, sig=good, events=events)) as resp:
            assert resp.status == 200  # (the stream of a running job stays open: not read to its end)
    status, _, _ = await h.get(f"/jobs/{mine.id}")
    assert status == 403


async def test_an_unknown_job_is_404(harness: Harness) -> None:
    for events in (False, True):
        status, headers, body = await harness.get(page_path(harness, 987654, events=events))
        assert status == 404
        assert "n'existe pas" in body.decode()
        assert headers["Referrer-Policy"] == "no-referrer"


async def test_headers_keep_the_page_private_and_run_only_its_own_script(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    job = await make_job(h, user, "Un tableau des ventes")
    status, headers, body = await h.get(page_path(h, job.id))
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert headers["Cache-Control"] == "no-store"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"
    csp = headers["Content-Security-Policy"]
    nonce = re.search(r"script-src 'nonce-([A-Za-z0-9_-]+)'", csp)
    assert nonce, csp
    assert f"style-src 'nonce-{nonce.group(1)}'" in csp
    assert "default-src 'none'" in csp and "connect-src 'self'" in csp and "unsafe" not in csp
    page = body.decode()
    assert f'<script nonce="{nonce.group(1)}">' in page and f'<style nonce="{nonce.group(1)}">' in page
    assert "http://" not in page.replace(h.settings.public_base_url, "")  # no external asset
    assert 'http-equiv="refresh"' in page  # without script, the page still refreshes while it runs
    _, again, _ = await h.get(page_path(h, job.id))
    assert again["Content-Security-Policy"] != csp  # a fresh nonce each time


async def test_the_page_speaks_the_owners_language(harness: Harness) -> None:
    h = harness
    english = await h.make_user(PHONE, language="en")
    french = await h.make_user(OTHER, language="fr")
    cases = ((english, ["Your request", "Steps", "Working", "Searching the web"], "Étapes"),
             (french, ["La demande", "Étapes", "En cours", "Recherche sur le web"], "Steps"))
    for user, words, absent in cases:
        job = await make_job(h, user, "Sales table")
        await step(h, job.id, 1, "call_a", "web_search", lang=user.language, duration_ms=2400)
        status, _, body = await h.get(page_path(h, job.id))
        page = body.decode()
        assert status == 200
        assert f'lang="{user.language}"' in page
        for word in words:
            assert word in page, (user.language, word)
        assert absent not in page
        assert ("2.4 s" if user.language == "en" else "2,4 s") in page


async def test_text_from_the_user_and_the_model_is_escaped(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    attack = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    job = await make_job(h, user, f"Fais un tableau {attack}")
    start = {"name": "web_search", "label": f"Recherche {attack}", "n": 1, "call_id": 'c1"><b>'}
    await jobs.record_event(h.services, job.id, "1:c1:start", "tool_start", start)
    await jobs.record_event(h.services, job.id, "status:running:1", "status",
                            {"status": "running", "note": attack})
    await done(h, job.id, f"Voici {attack} </script>", [])
    _, _, body = await h.get(page_path(h, job.id))
    page = body.decode()
    assert "<script>alert" not in page and "<img src=x" not in page and '"><b>' not in page
    # the request, the step's label, the status note and the answer:
    assert page.count("&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") == 4
    assert len(re.findall(r"<script\b", page)) == 2  # the page's settings and its own script only


async def test_the_finished_page_shows_the_answer_and_the_files(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    job = await make_job(h, user, "Un tableau Excel de mes ventes")
    await step(h, job.id, 1, "call_x", "generate_xlsx")
    row = await made_file(h, user, "Ventes mars 2026.xlsx", XLSX, b"PK\x03\x04 ventes")
    await done(h, job.id, "Voici ton tableau des ventes.", [row])
    _, _, body = await h.get(page_path(h, job.id))
    page = body.decode()
    assert "Voici ton tableau des ventes." in page and "Terminé" in page and "✅" in page
    assert 'http-equiv="refresh"' not in page  # ended: nothing more to wait for
    link = re.search(r'<a href="([^"]+)" download[^>]*>Ventes mars 2026\.xlsx', page)
    assert link, page
    href = link.group(1).replace("&amp;", "&")
    status, _, data = await h.get(href.removeprefix(h.settings.public_base_url))
    assert status == 200 and data == b"PK\x03\x04 ventes"


async def test_the_stream_replays_past_events_with_ids_and_ends_after_done(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    job = await make_job(h, user, "Un rapport")
    recorded = await step(h, job.id, 1, "call_a", "web_search")
    recorded += await step(h, job.id, 2, "call_b", "generate_pdf")
    row = await made_file(h, user, "Rapport.pdf", "application/pdf", b"%PDF-1.4 rapport")
    await done(h, job.id, "Ton rapport est prêt.", [row])
    async with h.session.get(h.base_url + page_path(h, job.id, events=True)) as resp:
        assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/event-stream")
        assert resp.headers["Cache-Control"] == "no-store"
        got = await read_events(resp)  # returns only once the server has ended the stream
        assert resp.content.at_eof()
    assert [e["type"] for _, e in got] == ["tool_start", "tool_end", "tool_start", "tool_end", "file", "done"]
    assert [int(i or 0) for i, _ in got] == [e["id"] for _, e in got]
    assert [e["id"] for _, e in got[:4]] == [e["id"] for e in recorded]
    file_event = got[4][1]
    assert file_event["file_id"] == row.id and file_event["url"].startswith(h.settings.public_base_url)
    status, _, data = await h.get(file_event["url"].removeprefix(h.settings.public_base_url))
    assert status == 200 and data == b"%PDF-1.4 rapport"
    assert got[5][1]["text"] == "Ton rapport est prêt."


async def test_the_stream_starts_after_last_event_id(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    job = await make_job(h, user, "Un rapport")
    first = await step(h, job.id, 1, "call_a", "web_search")
    second = await step(h, job.id, 2, "call_b", "browse_url")
    await done(h, job.id, "Fini.", [])
    url = h.base_url + page_path(h, job.id, events=True)
    async with h.session.get(url, headers={"Last-Event-ID": str(first[1]["id"])}) as resp:
        got = await read_events(resp)
    assert [e["id"] for _, e in got][:2] == [e["id"] for e in second]
    assert [e["type"] for _, e in got] == ["tool_start", "tool_end", "done"]


async def test_a_late_reader_gets_the_past_then_the_live_events(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    job = await make_job(h, user, "Un rapport")
    past = await step(h, job.id, 1, "call_a", "web_search")
    async with h.session.get(h.base_url + page_path(h, job.id, events=True)) as resp:
        replayed = await read_events(resp, count=2)
        assert [e for _, e in replayed] == past
        live = asyncio.create_task(read_events(resp, timeout_s=10))
        await asyncio.sleep(0.2)
        assert not live.done()  # the stream stays open while the job runs
        now = await step(h, job.id, 2, "call_b", "generate_docx", status=None)
        await jobs.record_event(h.services, job.id, "2:call_b:progress", "tool_progress",
                                {"name": "generate_docx", "note": "page 3/5"})
        await done(h, job.id, "Voilà.", [])
        got = await live
    assert [e["type"] for _, e in got] == ["tool_start", "tool_progress", "done"]
    assert got[0][1]["id"] == now[0]["id"] and all(i for i, _ in got)


async def test_a_job_ended_without_its_done_event_still_ends_the_stream(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    job = await make_job(h, user, "Un rapport")
    await step(h, job.id, 1, "call_a", "web_search")
    await finish_job(h, job.id, jobs.FAILED, "Je n'ai pas pu finir.", [])
    h.clock.advance(minutes=1)  # long after it ended, and still no `done`
    async with h.session.get(h.base_url + page_path(h, job.id, events=True)) as resp:
        got = await read_events(resp)
    assert [e["type"] for _, e in got] == ["tool_start", "tool_end", "done"]
    assert got[2] == (None, {"type": "done", "status": "failed", "text": "Je n'ai pas pu finir."})
    _, _, body = await h.get(page_path(h, job.id))
    assert "Je n&#39;ai pas pu finir." in body.decode() and "Échec" in body.decode()
