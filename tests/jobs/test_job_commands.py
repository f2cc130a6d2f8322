"""STATUT / STATUS and ANNULER / CANCEL through the real webhook, pipeline and handler chain:
answered at once from the database, never by the model, in the user's language, on WhatsApp and
SMS; the STATUT link opens that job's page (its signature checks)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlparse

import tools
from bot import jobs
from bot.channel import formatting
from bot.channel.links import check_job_signature
from bot.storage.models import GenerationJob, User
from tests.support.harness import Harness
from tests.support.job_records import add_job, conversation_of, stored_events, stored_job

PHONE = "+2250700000021"


async def say(h: Harness, body: str, channel: str = "whatsapp") -> list[str]:
    before = len(await h.texts_to(PHONE))
    status, _ = await h.inbound(PHONE, body, channel=channel)
    assert status == 200
    await h.settle()
    return (await h.texts_to(PHONE))[before:]


async def step(h: Harness, job: GenerationJob, n: int, name: str, seconds: float | None) -> None:
    """One tool step of the job's timeline, as the runner records it (unfinished when no seconds)."""
    label = jobs.step_label(tools.step_of(name), "fr")
    await jobs.record_event(h.services, job.id, f"{n}:c{n}:start", "tool_start",
                            {"name": name, "label": label, "n": n, "call_id": f"c{n}"})
    if seconds is not None:
        await jobs.record_event(h.services, job.id, f"{n}:c{n}:end", "tool_end",
                                {"name": name, "label": label, "status": "ok",
                                 "duration_ms": int(seconds * 1000), "n": n, "call_id": f"c{n}"})


async def running_job(h: Harness, user: User, **fields: Any) -> GenerationJob:
    job = await add_job(h, user, await conversation_of(h, user), jobs.RUNNING,
                        started_at=h.clock() - timedelta(seconds=185), **fields)
    await step(h, job, 1, "web_search", 12)
    await step(h, job, 2, "browse_url", 65)
    await step(h, job, 3, "generate_xlsx", None)
    return job


async def test_statut_shows_the_running_job_its_steps_and_its_link(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    job = await running_job(h, user)
    [reply] = await say(h, " statut ? ")
    lines = reply.split("\n")
    assert lines[:4] == [
        "⏳ En cours : 📊 Génération du tableur Excel…",
        "✅ 🔎 Recherche sur le web — 12 s",
        "✅ 🌍 Lecture de la page web — 1 min 05 s",
        "⏱️ Depuis 3 min 05 s",
    ]
    [link] = re.findall(r"https?://\S+", reply)
    url = urlparse(link)
    assert url.path == f"/jobs/{job.id}" and link.startswith(h.settings.public_base_url)
    [sig] = parse_qs(url.query)["sig"]
    assert check_job_signature(h.settings, str(job.id), sig) == job.id
    assert check_job_signature(h.settings, str(job.id + 1), sig) is None
    # « status » is understood in French too, and the answer is the same.
    assert [r.split("\n")[:4] for r in await say(h, "Status!")] == [lines[:4]]
    assert h.llm.requests == []


async def test_statut_by_sms_is_plain_gsm7(harness: Harness) -> None:
    h = harness
    await running_job(h, await h.make_user(PHONE, last_channel="sms"))
    [reply] = await say(h, "STATUT", channel="sms")
    assert formatting.is_gsm7(reply)
    assert "En cours : Génération du tableur Excel..." in reply and "Recherche sur le web - 12 s" in reply
    assert "Depuis 3 min 05 s" in reply and "/jobs/" in reply
    assert h.llm.requests == []


async def test_statut_without_a_job_says_so(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    await add_job(h, user, await conversation_of(h, user), jobs.COMPLETED)  # ended: not "in progress"
    assert await say(h, "STATUT") == ["Aucun travail en cours."]
    assert await say(h, "annuler") == ["Aucun travail en cours à annuler."]
    assert h.llm.requests == []


async def test_annuler_a_running_job_stops_it_after_its_step(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    job = await running_job(h, user)
    queued = await add_job(h, user, job.conversation_id, jobs.QUEUED)
    [reply] = await say(h, "Annuler.")
    assert reply.split("\n") == [
        "🛑 J'arrête dès la fin de l'étape en cours…",
        "➕ 1 autre en attente. Renvoie ANNULER pour l'arrêter aussi.",
    ]
    row = await stored_job(h, job.id)
    assert row.status == jobs.RUNNING and row.cancel_requested
    assert (await stored_job(h, queued.id)).status == jobs.QUEUED
    [status] = await say(h, "STATUT")
    assert "🛑 Arrêt demandé : je m'arrête après cette étape." in status.split("\n")
    assert status.endswith("➕ 1 autre en attente.")
    assert h.llm.requests == []


async def test_annuler_a_queued_job_cancels_it_at_once(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    job = await add_job(h, user, await conversation_of(h, user), jobs.QUEUED)
    assert await say(h, "ANNULER") == ["🛑 Annulé : ce travail n'avait pas encore commencé."]
    row = await stored_job(h, job.id)
    assert row.status == jobs.CANCELLED and row.finished_at is not None
    assert [e["type"] for e in await stored_events(h, job.id)] == ["status", "done"]
    [status] = await say(h, "STATUT")  # nothing runs: the job just cancelled is shown
    assert status.split("\n")[0] == "🛑 Annulé." and f"/jobs/{job.id}?sig=" in status
    assert h.llm.requests == []


async def test_an_english_user_gets_english(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, language="en")
    assert await say(h, "STATUS") == ["No work in progress."]
    job = await running_job(h, user)
    [reply] = await say(h, "statut")
    assert reply.split("\n")[:4] == [
        "⏳ Now: 📊 Building the Excel spreadsheet…",
        "✅ 🔎 Searching the web — 12 s",
        "✅ 🌍 Reading the web page — 1 min 05 s",
        "⏱️ Running for 3 min 05 s",
    ]
    assert reply.split("\n")[4].startswith("🔗 Live: ")
    assert await say(h, "cancel") == ["🛑 Stopping as soon as the current step ends…"]
    assert (await stored_job(h, job.id)).cancel_requested
    await add_job(h, user, job.conversation_id, jobs.QUEUED, created_at=h.clock() + timedelta(seconds=1))
    async with h.services.sessions() as db:
        stored = await db.get(GenerationJob, job.id)
        assert stored is not None
        stored.status = jobs.COMPLETED
        await db.commit()
    assert await say(h, "CANCEL") == ["🛑 Cancelled: that work had not started yet."]
    assert await say(h, "CANCEL") == ["No work in progress to cancel."]
    assert h.llm.requests == []


async def test_a_sentence_with_the_word_goes_to_the_model(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    h.llm.push_text("D'accord, je t'aide à écrire le message.")
    assert await say(h, "annuler la réunion de demain") == ["D'accord, je t'aide à écrire le message."]
    assert len(h.llm.requests) == 1
