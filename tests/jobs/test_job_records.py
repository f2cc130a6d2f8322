"""Background jobs' records (bot.jobs) on the test database and state: events stored
and published once per key, read back in order, ANNULER on queued and running jobs, which job is
the active one, the step labels and the STATUT text."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import tools
from bot import jobs
from bot.storage.models import GenerationJob
from tests.support.harness import Harness
from tests.support.job_records import add_job, conversation_of, stored_events, stored_job
from tools.registry import ALL_TOOL_NAMES

PHONE = "+2250700000011"
STEPS = tools.step_texts()  # each tool's step text, from its module


async def test_an_event_is_stored_and_published_once_per_key(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    job = await add_job(h, user, await conversation_of(h, user), jobs.RUNNING)
    start = {"name": "generate_xlsx", "label": jobs.step_label(tools.step_of("generate_xlsx"), "fr"), "n": 2,
             "call_id": "c1"}
    async with h.services.state.subscribe(jobs.progress_channel(job.id)) as sub:
        event = await jobs.record_event(h.services, job.id, "2:c1:start", "tool_start", start)
        again = await jobs.record_event(h.services, job.id, "2:c1:start", "tool_start", {**start, "n": 3})
        published = await sub.get(5)
        assert await sub.get(0.3) is None  # the replayed step published nothing
    assert again is None
    assert event is not None and event["type"] == "tool_start"
    assert event["label"] == "📊 Génération du tableur Excel…"
    assert event["n"] == 2 and event["call_id"] == "c1"
    assert datetime.fromisoformat(event["at"]) == h.clock()
    assert published is not None and json.loads(published) == event
    assert "Génération" in published  # JSON with the accents as they are
    assert await stored_events(h, job.id) == [event]


async def test_events_come_back_in_id_order_after_an_id(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    job = await add_job(h, user, await conversation_of(h, user), jobs.RUNNING)
    first = await jobs.record_event(h.services, job.id, "status:running:1", "status", {"status": "running"})
    second = await jobs.record_event(h.services, job.id, "1:c1:start", "tool_start", {"name": "web_search"})
    third = await jobs.record_event(h.services, job.id, "1:c1:end", "tool_end",
                                    {"name": "web_search", "status": "ok", "duration_ms": 1200})
    assert first and second and third
    assert [e["id"] for e in await stored_events(h, job.id)] == [first["id"], second["id"], third["id"]]
    assert await stored_events(h, job.id, after_id=first["id"]) == [second, third]
    assert await stored_events(h, job.id, after_id=third["id"]) == []
    assert (await stored_events(h, job.id))[0] == {"id": first["id"], "type": "status", "at": first["at"],
                                                   "status": "running"}


async def test_cancelling_a_queued_job_ends_it_at_once(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    job = await add_job(h, user, await conversation_of(h, user), jobs.QUEUED)
    async with h.services.state.subscribe(jobs.progress_channel(job.id)) as sub:
        cancelled = await jobs.request_cancel(h.services, job.id)
        live = [json.loads(await sub.get(5) or "{}") for _ in range(2)]
    assert cancelled is not None and cancelled.status == jobs.CANCELLED
    row = await stored_job(h, job.id)
    assert row.status == jobs.CANCELLED and row.cancel_requested and row.finished_at == h.clock()
    stored = await stored_events(h, job.id)
    assert [(e["type"], e["status"]) for e in stored] == [("status", "cancelled"), ("done", "cancelled")]
    assert stored[1]["text"] == "Annulé sur demande avant d'avoir commencé."
    assert live == stored  # a page watching the job sees it end
    assert await jobs.request_cancel(h.services, job.id) is None  # already ended: nothing to do


async def test_cancelling_a_running_job_asks_its_runner_to_stop(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    conv = await conversation_of(h, user)
    job = await add_job(h, user, conv, jobs.RUNNING, started_at=h.clock())
    flagged = await jobs.request_cancel(h.services, job.id)
    assert flagged is not None and flagged.status == jobs.RUNNING and flagged.cancel_requested
    row = await stored_job(h, job.id)
    assert row.status == jobs.RUNNING and row.cancel_requested and row.finished_at is None
    assert await stored_events(h, job.id) == []  # the runner records how it stopped
    done = await add_job(h, user, conv, jobs.COMPLETED)
    assert await jobs.request_cancel(h.services, done.id) is None
    assert not (await stored_job(h, done.id)).cancel_requested
    assert await jobs.request_cancel(h.services, 999_999) is None


async def test_the_active_job_is_the_running_one_else_the_oldest_queued(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    other = await h.make_user("+2250700000012")
    conv, other_conv = await conversation_of(h, user), await conversation_of(h, other)
    t0 = h.clock()
    await add_job(h, other, other_conv, jobs.RUNNING, created_at=t0 - timedelta(hours=1))
    await add_job(h, user, conv, jobs.COMPLETED, created_at=t0 - timedelta(hours=2))
    newer = await add_job(h, user, conv, jobs.QUEUED, created_at=t0 + timedelta(minutes=5))
    older = await add_job(h, user, conv, jobs.QUEUED, created_at=t0)
    running = await add_job(h, user, conv, jobs.RUNNING, created_at=t0 + timedelta(minutes=1))
    async with h.services.sessions() as db:
        active = await jobs.active_job(db, user.id)
        assert active is not None and active.id == running.id
        assert [j.id for j in await jobs.active_jobs(db, user.id)] == [running.id, older.id, newer.id]
        assert await jobs.user_jobs_ahead(db, newer) == 2
        assert await jobs.user_jobs_ahead(db, older) == 0
        stored = await db.get(GenerationJob, running.id)
        assert stored is not None
        stored.status = jobs.COMPLETED
        await db.commit()
        active = await jobs.active_job(db, user.id)
        assert active is not None and active.id == older.id
        assert await jobs.user_jobs_ahead(db, newer) == 1
        fresh = await jobs.create_job(db, user_id=user.id, conversation_id=conv, inbound_id=None,
                                      channel="sms", request="Encore", state={"messages": []},
                                      deadline_at=None, created_at=t0 + timedelta(minutes=9))
        await db.commit()
        assert fresh.id and fresh.status == jobs.QUEUED and not fresh.cancel_requested
        assert await jobs.user_jobs_ahead(db, fresh) == 2
        assert await jobs.active_job(db, 999_999) is None


def test_every_tool_has_its_own_label_in_both_languages() -> None:
    assert len(ALL_TOOL_NAMES) == 24
    for lang in ("fr", "en"):
        labels = [jobs.step_label(tools.step_of(name), lang) for name in ALL_TOOL_NAMES]
        assert len(set(labels)) == 24, labels  # none falls back on the generic label
        assert jobs.step_label(tools.step_of("no_such_tool"), lang) not in labels
        for label in labels:
            emoji, _, words = label.partition(" ")
            assert not emoji.isascii() and words[0].isupper() and label.endswith("…"), label
    assert jobs.step_label(tools.step_of("generate_xlsx"), "fr") == "📊 Génération du tableur Excel…"
    assert jobs.step_label(tools.step_of("generate_xlsx"), "en") == "📊 Building the Excel spreadsheet…"
    assert jobs.step_label(tools.step_of("web_search"), "fr") == "🔎 Recherche sur le web…"
    assert jobs.step_label(tools.step_of("send_email_to_user"), "fr") == "✉️ Envoi de l'e-mail…"
    assert jobs.step_label(tools.step_of("no_such_tool"), "fr") == "⚙️ Traitement en cours…"


def _tool(n: int, name: str, seconds: float | None, status: str = "ok") -> list[dict[str, Any]]:
    start = {"type": "tool_start", "name": name, "label": jobs.step_label(tools.step_of(name), "fr"), "n": n,
             "call_id": f"c{n}"}
    if seconds is None:
        return [start]
    return [start, {"type": "tool_end", "name": name, "status": status, "duration_ms": int(seconds * 1000),
                    "n": n, "call_id": f"c{n}"}]


def test_status_text_for_each_state_of_a_job() -> None:
    now = datetime.fromisoformat("2026-03-02T10:00:00+00:00")
    job = GenerationJob(status=jobs.RUNNING, step=None, cancel_requested=False,
                        created_at=now - timedelta(minutes=4), started_at=now - timedelta(seconds=185))
    events = [*_tool(1, "web_search", 12), *_tool(2, "web_search", 8), *_tool(3, "bash_execute", 3, "error"),
              *_tool(4, "generate_xlsx", None)]
    assert jobs.status_text(job, events, "fr", now, "https://x/jobs/1?sig=s", steps=STEPS).split("\n") == [
        "⏳ En cours : 📊 Génération du tableur Excel…",
        "✅ 🔎 Recherche sur le web ×2 — 20 s",
        "⚠️ 💻 Exécution du code — 3 s",
        "⏱️ Depuis 3 min 05 s",
        "🔗 En direct : https://x/jobs/1?sig=s",
    ]
    job.cancel_requested, job.step = True, "🧮 Totaux"
    assert jobs.status_text(job, events, "en", now, "L", steps=STEPS).split("\n")[:2] == [
        "⏳ Now: 🧮 Totaux", "🛑 Stopping after this step."]
    queued = GenerationJob(status=jobs.QUEUED, cancel_requested=False, created_at=now - timedelta(seconds=70))
    assert jobs.status_text(queued, [], "fr", now, "L", steps=STEPS) == (
        "🕒 En attente de démarrage.\n⏱️ En attente depuis 1 min 10 s\n🔗 En direct : L")
    done = GenerationJob(status=jobs.COMPLETED, cancel_requested=False, created_at=now - timedelta(hours=2),
                         started_at=now - timedelta(hours=2), finished_at=now - timedelta(minutes=55))
    assert jobs.status_text(done, _tool(1, "generate_pdf", 75), "en", now, "L", steps=STEPS) == (
        "✅ Done.\n✅ 📄 Making the PDF — 1 min 15 s\n⏱️ Took 1 h 05 min\n🔗 Live: L")
    thinking = GenerationJob(status=jobs.RUNNING, cancel_requested=False, created_at=now, started_at=now)
    browsed = _tool(1, "browse_url", 0.4)
    assert jobs.status_text(thinking, browsed, "fr", now, "L", steps=STEPS).split("\n")[:2] == [
        "⏳ En cours : 🤔 Réflexion…", "✅ 🌍 Lecture de la page web — 0 s"]
