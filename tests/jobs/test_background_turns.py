"""Long turns end to end in one process: promoted at the direct budget, carried on as a job,
STATUT and ANNULER while it runs, the answer sent once, a second request queued behind."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import select

from bot.storage.models import Conversation, GenerationJob, JobEvent, TurnRecord
from handlers.turn import LONG_WORK_NOTE
from tests.fakes.llm import Step
from tests.support.agent_loop import offer
from tests.support.background_turns import SLOW, jobs, long_harness, script_steps, unlinked, wait_job

PHONE = "+2250700000141"


async def test_a_turn_of_six_slow_steps_finishes_in_the_background(make_harness: Any) -> None:
    h = await long_harness(make_harness)
    await h.make_user(PHONE, mode="pro")
    script_steps(h, 6, 0.5)
    await h.inbound(PHONE, "Recherche les normes SYSCOHADA et fais le bilan")
    await h.settle()  # the message is done once the turn is promoted; the job goes on
    job = await wait_job(h, "completed")
    texts = unlinked(await h.texts_to(PHONE))
    assert texts.count(LONG_WORK_NOTE[0]) == 1, texts
    assert texts.count("Voici le bilan complet.") == 1 and texts[-1] == "Voici le bilan complet."
    assert texts.index(LONG_WORK_NOTE[0]) < texts.index("Voici le bilan complet.")
    # Six tool steps and the answer, one model call each, whichever process made them.
    assert len(h.llm.requests) == 7
    last = h.llm.requests[-1]["messages"]
    assert sum(1 for m in last if m["role"] == "tool") == 6
    assert job.attempts == 1 and job.result_text == "Voici le bilan complet." and job.error is None
    async with h.services.sessions() as db:
        events = (await db.scalars(select(JobEvent).where(JobEvent.job_id == job.id))).all()
        [turn] = (await db.scalars(select(TurnRecord))).all()
    assert sum(1 for e in events if e.type == "tool_end") == 6
    assert [e.data["status"] for e in events if e.type == "done"] == ["completed"]
    assert turn.exit_reason == "promoted"


async def test_statut_answers_at_once_while_the_job_runs(make_harness: Any) -> None:
    h = await long_harness(make_harness)
    await h.make_user(PHONE, mode="pro")
    script_steps(h, 4, 1.0)
    await h.inbound(PHONE, "Fais le bilan")
    await h.settle()
    job = await wait_job(h, "running")
    requests_before = len(h.llm.requests)
    await h.inbound(PHONE, "STATUT")
    await h.settle()
    reply = (await h.texts_to(PHONE))[-1]
    assert f"/jobs/{job.id}?sig=" in reply and "🔎" in reply, reply
    assert len(h.llm.requests) - requests_before <= 1  # STATUT itself asks the model nothing
    assert (await jobs(h))[0].status == "running"
    await wait_job(h, "completed")


async def test_annuler_stops_the_job_at_the_next_step_and_says_what_was_done(make_harness: Any) -> None:
    h = await long_harness(make_harness)
    await h.make_user(PHONE, mode="pro")
    script_steps(h, 6, 0.8)
    await h.inbound(PHONE, "Fais le bilan")
    await h.settle()
    await wait_job(h, "running")
    await h.inbound(PHONE, "ANNULER")
    await h.settle()
    job = await wait_job(h, "cancelled")
    texts = await h.texts_to(PHONE)
    told = [t for t in texts if t.startswith("🛑 Travail annulé")]
    assert len(told) == 1 and "Déjà fait" in told[0], texts
    assert "Voici le bilan complet." not in texts
    assert len(h.llm.requests) < 7 and job.finished_at is not None


async def test_asked_in_the_background_a_pro_turn_is_promoted_at_once(make_harness: Any) -> None:
    h = await long_harness(make_harness, turn_s="60")
    await h.make_user(PHONE, mode="pro")
    script_steps(h, 1, 0.1, answer="C'est prêt.")
    await h.inbound(PHONE, "Fais-moi le bilan en arrière-plan")
    await h.settle()
    await wait_job(h, "completed")
    texts = unlinked(await h.texts_to(PHONE))
    assert texts == [LONG_WORK_NOTE[0], "C'est prêt."]


async def test_a_second_long_request_waits_behind_the_first(make_harness: Any) -> None:
    h = await long_harness(make_harness)
    await h.make_user(PHONE, mode="pro")
    script_steps(h, 3, 0.6, answer="Premier fini.", when="Premier")
    await h.inbound(PHONE, "Premier long travail")
    await h.settle()
    await wait_job(h, "running")
    script_steps(h, 3, 0.6, answer="Second fini.", when="Second")
    await h.inbound(PHONE, "Second long travail")
    await h.settle()
    first = await wait_job(h, "completed", index=0)
    second = await wait_job(h, "completed", index=1)
    assert second.started_at is not None and first.finished_at is not None
    assert second.started_at >= first.finished_at
    texts = unlinked(await h.texts_to(PHONE))
    assert texts.index("Premier fini.") < texts.index("Second fini.")


async def test_a_job_resumed_by_another_worker_sends_nothing_twice(make_harness: Any) -> None:
    h = await long_harness(make_harness)
    await h.make_user(PHONE, mode="pro")
    script_steps(h, 5, 0.5)
    await h.inbound(PHONE, "Fais le bilan")
    await h.settle()
    await wait_job(h, "running")
    await asyncio.sleep(1.0)
    await h.restart_job_workers()  # the running job is dropped mid-step, then taken up again
    job = await wait_job(h, "completed", timeout_s=60)
    texts = unlinked(await h.texts_to(PHONE))
    assert texts.count("Voici le bilan complet.") == 1 and texts.count(LONG_WORK_NOTE[0]) == 1
    assert job.attempts >= 2


async def test_a_shutting_down_worker_hands_the_job_back_after_its_step(make_harness: Any) -> None:
    h = await long_harness(make_harness)
    await h.make_user(PHONE, mode="pro")
    script_steps(h, 4, 0.6)
    await h.inbound(PHONE, "Fais le bilan")
    await h.settle()
    await wait_job(h, "running")
    h.services.jobs.draining = True  # what a SIGTERM does: finish the step, then give the job back
    await asyncio.sleep(1.5)  # the step running then ends; no other starts
    [job] = await jobs(h)
    assert job.state is not None
    steps_then = job.state["iteration"]
    assert job.status == "running" and job.attempts == 1
    await asyncio.sleep(1.0)
    [job] = await jobs(h)
    assert job.state is not None
    assert job.state["iteration"] == steps_then and job.attempts == 1  # nothing runs meanwhile
    assert "Voici le bilan complet." not in unlinked(await h.texts_to(PHONE))
    h.services.jobs.draining = False
    await h.restart_job_workers()
    done = await wait_job(h, "completed")
    assert done.attempts == 2
    assert unlinked(await h.texts_to(PHONE)).count("Voici le bilan complet.") == 1


async def test_an_answer_outside_the_24h_window_goes_as_the_template(make_harness: Any) -> None:
    h = await make_harness(AGENT_TURN_TIMEOUT_S="1", AGENT_FINAL_RESERVE_S="1", JOB_SWEEP_INTERVAL_S="1",
                           JOB_LEASE_S="1", TWILIO_TEMPLATE_SID="HX" + "e" * 32)
    offer(h, SLOW)
    await h.make_user(PHONE, mode="pro")
    script_steps(h, 4, 0.6)
    await h.inbound(PHONE, "Fais le bilan")
    await h.settle()
    await wait_job(h, "running")
    h.clock.advance(hours=25)  # the person has not written for a day when the work ends
    await wait_job(h, "completed")
    last = h.twilio.sent[-1]
    assert last["ContentSid"] == "HX" + "e" * 32 and "Body" not in last
    assert "Voici le bilan complet." in last["ContentVariables"]


async def test_a_job_that_fails_for_good_says_so_and_keeps_the_error(make_harness: Any) -> None:
    h = await long_harness(make_harness)
    user = await h.make_user(PHONE, mode="pro")
    async with h.services.sessions() as db:
        conversation = Conversation(user_id=user.id, active=True, created_at=h.clock())
        db.add(conversation)
        await db.flush()
        job = GenerationJob(user_id=user.id, conversation_id=conversation.id, channel="whatsapp",
                            request="bilan", status="queued", state={"broken": True})
        db.add(job)
        await db.commit()
    await h.services.jobs.aenqueue(job.id)
    failed = await wait_job(h, "failed")
    assert failed.error is not None and "no saved turn" in failed.error
    [told] = await h.texts_to(PHONE)
    assert told.startswith("❌ Désolé, je n'ai pas pu finir ce travail")


async def test_a_background_job_is_charged_down_to_the_overdraft_not_below(make_harness: Any) -> None:
    """The job's model calls are charged by the same meter as the message's turn: a call that
    costs far more than estimated takes the balance down to -TURN_OVERDRAFT_CREDITS, not further."""
    from bot.storage.models import CreditEntry, User

    h = await make_harness(AGENT_TURN_TIMEOUT_S="1", AGENT_FINAL_RESERVE_S="1", JOB_SWEEP_INTERVAL_S="1",
                           JOB_LEASE_S="1", TURN_OVERDRAFT_CREDITS="2")  # 2,000 tokens a credit
    offer(h, SLOW)
    user = await h.make_user(PHONE, mode="pro", credit_balance=3)

    def respond(body: dict[str, Any]) -> Step:
        if not any(m["role"] == "tool" for m in body["messages"]):  # the direct turn's one step
            return Step("tools", calls=[("web_search", {"s": 1.5, "what": "normes"}, None)],
                        usage={"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100})
        # In the job: one call worth 160 credits.
        return Step("text", content="Voici le bilan.",
                    usage={"prompt_tokens": 319_900, "completion_tokens": 100, "total_tokens": 320_000})

    h.llm.responder = respond
    await h.inbound(PHONE, "Recherche les normes et fais le bilan")
    await h.settle()
    job = await wait_job(h, "completed")
    assert unlinked(await h.texts_to(PHONE))[-1] == "Voici le bilan."
    async with h.services.sessions() as db:
        rows = (await db.execute(select(CreditEntry.delta, CreditEntry.ref).where(
            CreditEntry.user_id == user.id, CreditEntry.reason == "usage").order_by(CreditEntry.id))).all()
        row = await db.get(User, user.id)
    assert row is not None
    # 1 credit for the direct step (its ref names the message's turn), then 4 of the 160 due: 3 - 1 - 4.
    assert row.credit_balance == -2
    assert [delta for delta, _ in rows] == [-1, -4]
    assert rows[0][1].startswith("turn:") and rows[1][1] == f"job:{job.id}:call:2"
