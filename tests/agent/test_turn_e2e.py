"""Agent turns end to end: a signed Twilio webhook in, the real pipeline and handler chain, the
real LLM client against the local SSE server, messages out through the fake Twilio."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sqlalchemy import select

from bot.agent.toolspec import Tool
from bot.billing import credits
from bot.storage.models import CreditEntry, GenerationJob, Memory, Message, TurnRecord
from handlers.turn import LONG_WORK_NOTE
from tests.support.agent_loop import ECHO, HANG, HUGE, offer
from tests.support.background_turns import unlinked

PHONE = "+2250700000001"


async def turns(h: Any) -> list[TurnRecord]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(TurnRecord).order_by(TurnRecord.id))).all())


async def messages(h: Any) -> list[Message]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(Message).order_by(Message.id))).all())


async def test_plain_answer_is_sent_recorded_and_charged(harness: Any) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="child", school_level="CM2", display_name="Awa")
    h.llm.push_text(
        "Bonjour Awa ! Sur quoi veux-tu travailler ?",
        usage={"prompt_tokens": 2500, "completion_tokens": 100, "total_tokens": 2600},
    )
    status, _ = await h.inbound(PHONE, "Bonjour")
    assert status == 200
    await h.settle()
    assert await h.texts_to(PHONE) == ["Bonjour Awa ! Sur quoi veux-tu travailler ?"]
    req = h.llm.requests[0]
    system = req["messages"][0]["content"]
    assert req["messages"][0]["role"] == "system" and "socratique" in system and "CM2" in system
    assert req["messages"][-1] == {"role": "user", "content": "Bonjour"}
    assert "tools" in req  # child mode is offered tools
    [turn] = await turns(h)
    assert turn.exit_reason == "answered" and turn.prompt_tokens == 2500 and turn.iterations == 1
    assert [m.role for m in await messages(h)] == ["user", "assistant"]
    async with h.services.sessions() as db:
        # 2,600 tokens at 2,000 tokens per credit: 2 credits.
        assert await credits.balance(db, user.id) == h.settings.signup_credits - 2
        usage = (await db.scalars(select(CreditEntry).where(CreditEntry.reason == "usage"))).all()
        assert [e.delta for e in usage] == [-2]


async def test_one_tool_text_before_tools_goes_out_first(harness: Any) -> None:
    h = harness
    offer(h, ECHO)
    await h.make_user(PHONE, mode="pro")
    h.llm.push_tool_calls(("echo", {"x": 3}), content="Je calcule…")
    h.llm.push_text("C'est 3.")
    await h.inbound(PHONE, "Combien ?")
    await h.settle()
    assert await h.texts_to(PHONE) == ["Je calcule…", "C'est 3."]
    rows = await messages(h)
    assert [m.role for m in rows] == ["user", "assistant", "tool", "assistant"]
    assert rows[1].tool_calls is not None and rows[2].content is not None
    assert rows[1].tool_calls[0]["id"] == rows[2].tool_call_id
    assert json.loads(rows[2].content) == {"success": True, "echo": {"x": 3}}


async def test_history_with_tool_pairs_is_sent_on_the_next_message(harness: Any) -> None:
    h = harness
    offer(h, ECHO)
    await h.make_user(PHONE, mode="pro")
    h.llm.push_tool_calls(("echo", {"x": 1}))
    h.llm.push_text("Premier.")
    await h.inbound(PHONE, "Un")
    await h.settle()
    await h.stop_workers()  # a restarted worker continues the conversation from the database
    await h.start_workers()
    h.llm.push_text("Second.")
    await h.inbound(PHONE, "Deux")
    await h.settle()
    roles = [m["role"] for m in h.llm.requests[-1]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert h.llm.requests[-1]["messages"][1]["content"] == "Un"


async def test_twelve_tool_requests_end_with_text(make_harness: Any) -> None:
    h = await make_harness()
    offer(h, ECHO)
    await h.make_user(PHONE, mode="child")
    for i in range(12):
        h.llm.push_tool_calls(("echo", {"x": i}))
    await h.inbound(PHONE, "Boucle")
    await h.settle()
    texts = await h.texts_to(PHONE)
    assert len(texts) == 1 and texts[0]
    assert h.llm.requests[9]["tool_choice"] == "none"
    [turn] = await turns(h)
    assert turn.exit_reason == "forced_max_iterations" and turn.iterations == 10


async def test_hanging_tool_one_progress_note_then_answer(make_harness: Any) -> None:
    h = await make_harness(
        AGENT_TOOL_TIMEOUT_S="1", AGENT_PROGRESS_NOTE_AFTER_S="0.2", AGENT_FINAL_RESERVE_S="0.5"
    )
    offer(h, HANG)
    await h.make_user(PHONE, mode="child")
    h.llm.push_tool_calls(("hang", {}), ("hang", {"other": 1}))
    h.llm.push_text("Désolé, la génération a pris trop de temps.")
    await h.inbound(PHONE, "Fais-moi un PDF")
    await h.settle()
    assert await h.texts_to(PHONE) == [
        "⏳ Je prépare ton fichier PDF…",
        "Désolé, la génération a pris trop de temps.",
    ]
    results = [json.loads(m["content"]) for m in h.llm.requests[1]["messages"] if m["role"] == "tool"]
    assert [r["code"] for r in results] == ["timeout", "timeout"]


async def test_turn_deadline(make_harness: Any) -> None:
    """Past its direct budget the turn goes on in the background; at the background budget the
    last step is forced to text, and the user gets the long-work note, then that answer."""
    h = await make_harness(
        AGENT_TOOL_TIMEOUT_S="0.5",
        AGENT_TURN_TIMEOUT_S="1",
        AGENT_BACKGROUND_TIMEOUT_S="3",
        AGENT_FINAL_RESERVE_S="0.5",
        AGENT_PROGRESS_NOTE_AFTER_S="60",
    )
    offer(h, HANG)
    await h.make_user(PHONE, mode="pro")
    for i in range(9):
        h.llm.push_tool_calls(("hang", {"n": i}))
    h.llm.push_text("Voici ce que j'ai pu faire.")
    await h.inbound(PHONE, "Travaille longtemps")
    await h.settle()
    [turn] = await turns(h)
    assert turn.exit_reason == "promoted" and turn.latency_ms < 4000
    for _ in range(200):
        async with h.services.sessions() as db:
            job = await db.scalar(select(GenerationJob))
        if job is not None and job.status == "completed":
            break
        await asyncio.sleep(0.05)
    assert job is not None and job.status == "completed"
    assert job.state["exit_reason"] == "forced_deadline" and job.state["iteration"] < 10
    texts = unlinked(await h.texts_to(PHONE))
    assert texts == [LONG_WORK_NOTE[0], job.result_text] and job.result_text


async def test_pro_only_tool_asked_in_child_mode_with_the_real_registry(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE, mode="child")
    h.llm.push_tool_calls(("bash_execute", {"command": "rm -rf /"}))
    h.llm.push_text("Je ne peux pas faire ça ici.")
    await h.inbound(PHONE, "Lance une commande")
    await h.settle()
    offered = {t["function"]["name"] for t in h.llm.requests[0]["tools"]}
    assert "bash_execute" not in offered and "draft_email" not in offered
    [result] = [json.loads(m["content"]) for m in h.llm.requests[1]["messages"] if m["role"] == "tool"]
    assert result["code"] == "not_allowed"
    assert await h.texts_to(PHONE) == ["Je ne peux pas faire ça ici."]


async def test_broken_json_and_unknown_tool_through_http(harness: Any) -> None:
    h = harness
    offer(h, ECHO)
    await h.make_user(PHONE, mode="pro")
    h.llm.push_tool_calls(("echo", '{"x": 1'), ("teleport", {}), ("echo", "nope"))
    h.llm.push_text("Corrigé.")
    await h.inbound(PHONE, "Essaie")
    await h.settle()
    results = [json.loads(m["content"]) for m in h.llm.requests[1]["messages"] if m["role"] == "tool"]
    assert results[0] == {"success": True, "echo": {"x": 1}}  # the missing brace was repaired
    assert results[1]["code"] == "unknown_tool" and results[2]["code"] == "invalid_json"
    stored = [c["function"]["arguments"] for m in await messages(h) if m.tool_calls for c in m.tool_calls]
    assert stored == ['{"x": 1}', "{}", "{}"]
    assert await h.texts_to(PHONE) == ["Corrigé."]


async def test_huge_results_stay_within_context_budget(make_harness: Any) -> None:
    h = await make_harness(LLM_CONTEXT_TOKENS="8000")
    offer(h, HUGE)
    await h.make_user(PHONE, mode="pro")
    for _ in range(4):
        h.llm.push_tool_calls(("browse_url", {"size": 500_000}), ("browse_url", {"size": 100_000}))
    h.llm.push_text("Voici le résumé.")
    await h.inbound(PHONE, "Lis ces pages")
    await h.settle()
    for req in h.llm.requests:
        size = sum(
            len(m.get("content") or "") + len(json.dumps(m.get("tool_calls") or [])) for m in req["messages"]
        )
        assert size / 3.5 <= 8000
        assert req["messages"][0]["role"] == "system"
        assert any(m["role"] == "user" and m["content"] == "Lis ces pages" for m in req["messages"])
    assert await h.texts_to(PHONE) == ["Voici le résumé."]


async def test_429_then_success_and_fallback_model(make_harness: Any) -> None:
    h = await make_harness(LLM_FALLBACK_MODELS="test/backup")
    await h.make_user(PHONE, mode="pro")
    h.llm.push_status(429)
    h.llm.push_text("Après une courte attente.")
    await h.inbound(PHONE, "Un")
    await h.settle()
    assert await h.texts_to(PHONE) == ["Après une courte attente."]
    for _ in range(3):
        h.llm.push_status(500)
    h.llm.push_text("Depuis le modèle de secours.")
    await h.inbound(PHONE, "Deux")
    await h.settle()
    assert (await h.texts_to(PHONE))[-1] == "Depuis le modèle de secours."
    assert [r["model"] for r in h.llm.requests[-4:]] == ["test/model"] * 3 + ["test/backup"]


async def test_provider_dying_mid_stream_and_down(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE, mode="pro")
    h.llm.push_die("Je comm")
    h.llm.push_text("Réponse entière.")
    await h.inbound(PHONE, "Un")
    await h.settle()
    assert await h.texts_to(PHONE) == ["Réponse entière."]
    for _ in range(3):
        h.llm.push_status(502)
    await h.inbound(PHONE, "Deux")
    await h.settle()
    last = (await h.texts_to(PHONE))[-1]
    assert "réessayer" in last
    assert (await turns(h))[-1].exit_reason == "provider_error"


async def test_guest_has_no_tools_and_a_daily_allowance(make_harness: Any) -> None:
    h = await make_harness(GUEST_DAILY_MESSAGES="2")
    user = await h.make_user(PHONE, mode="guest", credit_balance=0)
    for body in ("Un", "Deux", "Trois"):
        await h.inbound(PHONE, body)
        await h.settle()
    assert len(h.llm.requests) == 2
    assert all("tools" not in r for r in h.llm.requests)
    texts = await h.texts_to(PHONE)
    assert "2 messages gratuits" in texts[-1] and "*1* (Élève)" in texts[-1]  # WhatsApp bold
    async with h.services.sessions() as db:
        assert await credits.balance(db, user.id) == 0
    h.clock.advance(days=1)
    await h.inbound(PHONE, "Quatre")
    await h.settle()
    assert len(h.llm.requests) == 3


async def test_user_without_credits_is_told_how_to_get_more(make_harness: Any) -> None:
    h = await make_harness(PAYMENT_PROVIDER="local", PAYMENT_SECRET="local-secret")
    await h.make_user(PHONE, mode="child", credit_balance=0)
    await h.inbound(PHONE, "Aide-moi")
    await h.settle()
    assert h.llm.requests == []
    [text] = await h.texts_to(PHONE)
    assert "plus de crédits" in text and "*ACHETER*" in text
    # Doing what the message says shows the packs.
    await h.inbound(PHONE, "ACHETER")
    await h.settle()
    offers = (await h.texts_to(PHONE))[-1]
    assert "1" in offers and "FCFA" in offers, offers
    assert h.llm.requests == []


async def test_english_user_memories_after_stable_prefix(harness: Any) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="pro", language="en")
    other = await h.make_user("+2250700000002", mode="pro")
    async with h.services.sessions() as db:
        db.add(Memory(user_id=user.id, fact="Works as an accountant in Dakar"))
        await db.commit()
    h.llm.push_text("Hello!")
    h.llm.push_text("Bonjour !")
    await h.inbound(PHONE, "Hi")
    await h.settle()
    await h.inbound(other.phone, "Salut")
    await h.settle()
    first, second = (r["messages"][0]["content"] for r in h.llm.requests)
    assert "Works as an accountant in Dakar" in first and "English" in first
    assert "Works as an accountant" not in second
    prefix = first[: first.index("# Cette personne")]
    assert second.startswith(prefix) and "SYSCOHADA" in prefix


async def test_files_sent_by_the_user_are_described_to_the_model(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE, mode="pro")
    h.llm.push_text("J'ai bien reçu ton document.")
    await h.inbound(PHONE, "Voici mon bilan", media=[(b"%PDF-1.4 fake", "application/pdf")])
    await h.settle()
    assert await h.texts_to(PHONE) == ["J'ai bien reçu ton document."]
    user_msg = h.llm.requests[0]["messages"][-1]
    assert user_msg["role"] == "user" and user_msg["content"].startswith("Voici mon bilan")
    assert "read_user_file" in user_msg["content"] and "application/pdf" in user_msg["content"]
    assert "file id" in user_msg["content"]


async def test_tool_delivers_to_user_and_reports_progress_once(make_harness: Any) -> None:
    h = await make_harness(AGENT_PROGRESS_NOTE_AFTER_S="30")

    async def make_pdf(ctx: Any, _args: dict[str, Any]) -> dict[str, Any]:
        assert ctx.progress is not None
        await ctx.progress("Je prépare ton fichier PDF…")
        await ctx.progress("Encore un instant…")  # a second note is not sent: never a flood
        await ctx.send(text="Voici ton fichier.")
        return {"success": True, "file_id": 1}

    offer(
        h,
        Tool("make_pdf", "makes a pdf", {"type": "object"}, frozenset({"pro"}), make_pdf, side_effects=True),
    )
    await h.make_user(PHONE, mode="pro")
    h.llm.push_tool_calls(("make_pdf", {}))
    h.llm.push_text("C'est fait.")
    await h.inbound(PHONE, "Un PDF stp")
    await h.settle()
    assert await h.texts_to(PHONE) == ["⏳ Je prépare ton fichier PDF…", "Voici ton fichier.", "C'est fait."]
