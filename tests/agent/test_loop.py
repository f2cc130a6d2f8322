"""The agent loop against a real local OpenAI-compatible SSE server (FakeLLM)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bot.agent.llm import LLMClient
from bot.agent.loop import ANSWERED, FORCED_DEADLINE, FORCED_MAX_ITERATIONS, PROVIDER_ERROR
from bot.agent.toolspec import Tool, ToolContext
from bot.agent.truncation import total_tokens
from bot.config import Limits
from bot.sandbox.killable import pid_alive
from tests.fakes.llm import FakeLLM
from tests.support.agent_loop import (
    BOOM,
    ECHO,
    HANG,
    HANG_BLOCKING,
    HUGE,
    SendLog,
    drive,
    make_settings,
    side_effect_tool,
)
from tests.support.sse_corpus import CORPUS


def tool_messages(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m["role"] == "tool"]


async def test_plain_answer(fake_llm: FakeLLM) -> None:
    fake_llm.push_text("Bonjour ! Comment puis-je t'aider ?")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [ECHO])
    assert turn.texts == ["Bonjour ! Comment puis-je t'aider ?"]
    assert turn.outcome.exit_reason == ANSWERED
    assert turn.outcome.prompt_tokens == 100 and turn.outcome.completion_tokens == 20
    req = fake_llm.requests[0]
    assert req["stream"] is True and req["model"] == "main-model"
    assert req["tools"][0]["function"]["name"] == "echo" and "tool_choice" not in req
    assert fake_llm.headers[0]["Authorization"] == "Bearer test-key"
    await llm.close()


async def test_one_tool_then_answer(fake_llm: FakeLLM) -> None:
    fake_llm.push_tool_calls(("echo", {"x": 7}), content="Je vérifie.")
    fake_llm.push_text("Le résultat est 7.")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [ECHO])
    assert turn.texts == ["Je vérifie.", "Le résultat est 7."]
    assert [e["type"] for e in turn.events] == ["step", "text", "tool_start", "tool_end", "step", "text"]
    second = fake_llm.requests[1]["messages"]
    assistant = second[-2]
    assert assistant["tool_calls"][0]["function"] == {"name": "echo", "arguments": '{"x": 7}'}
    assert second[-1]["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert json.loads(second[-1]["content"]) == {"success": True, "echo": {"x": 7}}
    assert [m["role"] for m in turn.outcome.new_messages] == ["assistant", "tool", "assistant"]
    await llm.close()


async def test_model_asking_for_tools_twelve_times(fake_llm: FakeLLM) -> None:
    for i in range(12):
        fake_llm.push_tool_calls(("echo", {"x": i}))
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [ECHO])
    # 10 iterations; the 10th is sent with tool_choice none and still answers with a tool call,
    # so the loop asks once more without tools: 11 requests, and the user gets text.
    assert len(fake_llm.requests) == 11
    assert all("tool_choice" not in r for r in fake_llm.requests[:9])
    assert fake_llm.requests[9]["tool_choice"] == "none" and "tools" in fake_llm.requests[9]
    assert "tools" not in fake_llm.requests[10] and "tool_choice" not in fake_llm.requests[10]
    assert turn.outcome.exit_reason == FORCED_MAX_ITERATIONS
    assert len(turn.texts) == 1 and turn.texts[0]
    assert len(turn.of("tool_start")) == 9
    # From the 8th iteration the model is told how many steps are left.
    assert "2 étape(s)" in json.dumps(fake_llm.requests[8]["messages"], ensure_ascii=False)
    await llm.close()


async def test_last_iteration_answer_with_tool_choice_none(fake_llm: FakeLLM) -> None:
    for i in range(2):
        fake_llm.push_tool_calls(("echo", {"x": i}))
    fake_llm.push_text("Voici la réponse finale.")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [ECHO], limits=Limits(max_iterations=3))
    assert fake_llm.requests[2]["tool_choice"] == "none"
    assert turn.texts == ["Voici la réponse finale."]
    assert turn.outcome.exit_reason == FORCED_MAX_ITERATIONS
    assert [i["n"] for i in turn.outcome.iterations] == [1, 2, 3]
    await llm.close()


async def test_hanging_async_tool_is_cancelled_with_progress_note(fake_llm: FakeLLM) -> None:
    fake_llm.push_tool_calls(("hang", {}))
    fake_llm.push_text("L'outil a pris trop de temps, désolé.")
    llm = LLMClient(make_settings(fake_llm.url))
    limits = Limits(tool_timeout_s=0.5, progress_note_after_s=0.1, final_answer_reserve_s=0.5)
    turn = await drive(llm, [HANG], limits=limits)
    progress = turn.of("tool_progress")
    assert len(progress) == 1 and progress[0]["note"] == "Je prépare ton fichier PDF…"
    assert turn.of("tool_end")[0]["status"] == "timeout"
    result = json.loads(tool_messages(fake_llm.requests[1])[0]["content"])
    assert result["success"] is False and result["code"] == "timeout"
    assert turn.texts == ["L'outil a pris trop de temps, désolé."]
    await llm.close()


async def test_blocking_tool_process_is_killed(fake_llm: FakeLLM, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    fake_llm.push_tool_calls(("hang_blocking", {"pid_file": str(pid_file)}))
    fake_llm.push_text("Trop long.")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [HANG_BLOCKING], limits=Limits(tool_timeout_s=2.5, final_answer_reserve_s=0.5))
    assert turn.of("tool_end")[0]["status"] == "timeout"
    pid = int(pid_file.read_text())
    assert not pid_alive(pid)
    assert turn.texts == ["Trop long."]
    await llm.close()


async def test_turn_deadline_forces_the_final_answer(fake_llm: FakeLLM) -> None:
    # Each tool call hangs until its timeout; the turn deadline comes before the iteration cap.
    for _ in range(10):
        fake_llm.push_tool_calls(("hang", {}))
    llm = LLMClient(make_settings(fake_llm.url))
    limits = Limits(
        tool_timeout_s=0.4, turn_timeout_s=1.5, final_answer_reserve_s=0.5, progress_note_after_s=60
    )
    loop = asyncio.get_running_loop()
    start = loop.time()
    turn = await drive(llm, [HANG], limits=limits)
    assert loop.time() - start < 3.0
    assert turn.outcome.exit_reason == FORCED_DEADLINE
    forced = [r for r in fake_llm.requests if r.get("tool_choice") == "none"]
    assert len(forced) == 1
    # The provider answered the forced call with tool calls anyway: asked once more without tools.
    assert "tools" not in fake_llm.requests[-1]
    assert len(fake_llm.requests) < 10
    assert len(turn.texts) == 1 and turn.texts[0]
    await llm.close()


async def test_llm_call_running_into_the_reserve_goes_to_forced_answer(fake_llm: FakeLLM) -> None:
    fake_llm.push_hang(2.5)
    fake_llm.push_text("Réponse rapide.")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [ECHO], limits=Limits(turn_timeout_s=2.0, final_answer_reserve_s=1.0))
    assert turn.outcome.exit_reason == FORCED_DEADLINE
    assert turn.texts == ["Réponse rapide."]
    assert fake_llm.requests[-1]["tool_choice"] == "none"
    await llm.close()


async def test_broken_json_unknown_tool_and_exception(fake_llm: FakeLLM) -> None:
    fake_llm.push_tool_calls(
        ("echo", '{"x": 1,}'),
        ("echo", "{{not json"),
        ("nope", {}),
        ("boom", {}),
        ("echo", {"x": "pas un nombre"}),
    )
    fake_llm.push_text("Fini.")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [ECHO, BOOM])
    results = [json.loads(m["content"]) for m in tool_messages(fake_llm.requests[1])]
    assert results[0] == {"success": True, "echo": {"x": 1}}  # trailing comma repaired
    assert results[1]["code"] == "invalid_json"
    assert results[2]["code"] == "unknown_tool" and "echo" in results[2]["error"]
    assert results[3]["code"] == "exception" and "disk on fire" in results[3]["error"]
    assert results[4]["code"] == "invalid_arguments"
    stored = fake_llm.requests[1]["messages"][-6]["tool_calls"]
    assert [c["function"]["arguments"] for c in stored] == [
        '{"x": 1}',
        "{}",
        "{}",
        "{}",
        '{"x": "pas un nombre"}',
    ]
    ids = [c["id"] for c in stored]
    assert len(set(ids)) == 5
    assert [m["tool_call_id"] for m in tool_messages(fake_llm.requests[1])] == ids
    assert turn.texts == ["Fini."]
    await llm.close()


async def test_pro_only_tool_in_child_mode(fake_llm: FakeLLM) -> None:
    fake_llm.push_tool_calls(("bash_execute", {"command": "ls"}))
    fake_llm.push_text("Je ne peux pas exécuter de commandes ici.")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [ECHO], known=("bash_execute", "draft_email", "echo"))
    result = json.loads(tool_messages(fake_llm.requests[1])[0]["content"])
    assert result["code"] == "not_allowed" and "child" in result["error"]
    assert [t["function"]["name"] for t in fake_llm.requests[0]["tools"]] == ["echo"]
    assert turn.texts == ["Je ne peux pas exécuter de commandes ici."]
    await llm.close()


async def test_huge_tool_results_keep_context_within_budget(fake_llm: FakeLLM) -> None:
    for _ in range(6):
        fake_llm.push_tool_calls(("browse_url", {"size": 300_000}), ("browse_url", {"size": 250_000}))
    fake_llm.push_text("Résumé.")
    llm = LLMClient(make_settings(fake_llm.url))
    budget = 12_000
    history = [{"role": "system", "content": "sys"}]
    for i in range(20):
        history += [
            {"role": "user", "content": f"question {i} " + "q" * 2000},
            {"role": "assistant", "content": f"réponse {i} " + "r" * 2000},
        ]
    history.append({"role": "user", "content": "La vraie question du jour"})
    turn = await drive(llm, [HUGE], context_tokens=budget, messages=history)
    assert turn.texts == ["Résumé."]
    for req in fake_llm.requests:
        msgs = req["messages"]
        assert total_tokens(msgs) <= budget
        assert msgs[0] == {"role": "system", "content": "sys"}
        assert any(m["content"] == "La vraie question du jour" for m in msgs)
        # every tool result has its call, every call its result
        calls = [c["id"] for m in msgs if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        assert calls == [m["tool_call_id"] for m in msgs if m["role"] == "tool"]
        for m in msgs:
            if m["role"] == "tool":
                assert len(m["content"]) < 8_200 and "[truncated: showing" in m["content"]
    # The newest tool result keeps its full 8,000-character cut; older ones shrink first.
    last = tool_messages(fake_llm.requests[-1])
    assert "showing 8,000 of 300,000" in last[-2]["content"]
    await llm.close()


async def test_side_effect_tool_not_repeated_in_a_turn(fake_llm: FakeLLM) -> None:
    log = SendLog()
    tool = side_effect_tool(log)
    fake_llm.push_tool_calls(
        ("send_sms_to_user", {"message": "Rappel"}), ("send_sms_to_user", {"message": "Rappel"})
    )
    fake_llm.push_tool_calls(("send_sms_to_user", {"message": "Rappel"}))
    fake_llm.push_tool_calls(("send_sms_to_user", {"message": "Autre"}))
    fake_llm.push_text("Envoyé.")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [tool])
    assert log.sends == [{"message": "Rappel"}, {"message": "Autre"}]
    dup = json.loads(tool_messages(fake_llm.requests[1])[1]["content"])
    assert dup["sent"] is True and "not run again" in dup["note"]
    dup2 = json.loads(tool_messages(fake_llm.requests[2])[-1]["content"])
    assert "not run again" in dup2["note"]
    assert turn.texts == ["Envoyé."]
    await llm.close()


async def test_429_then_success(fake_llm: FakeLLM) -> None:
    fake_llm.push_status(429)
    fake_llm.push_status(503)
    fake_llm.push_text("Me voilà.")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [ECHO])
    assert turn.texts == ["Me voilà."]
    assert len(fake_llm.requests) == 3
    assert turn.outcome.iterations[0]["attempts"] == 3
    await llm.close()


async def test_provider_dying_mid_stream_is_retried(fake_llm: FakeLLM) -> None:
    fake_llm.push_die("Je commen")
    fake_llm.push_text("Réponse complète.")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [ECHO])
    assert turn.texts == ["Réponse complète."]
    assert turn.outcome.exit_reason == ANSWERED
    await llm.close()


async def test_fallback_model_after_main_model_fails(fake_llm: FakeLLM) -> None:
    fake_llm.push_status(404, json.dumps({"error": {"message": "no such model"}}))
    fake_llm.push_text("Réponse du modèle de secours.")
    llm = LLMClient(make_settings(fake_llm.url, LLM_FALLBACK_MODELS="backup-1, backup-2"))
    turn = await drive(llm, [ECHO])
    assert [r["model"] for r in fake_llm.requests] == ["main-model", "backup-1"]
    assert turn.texts == ["Réponse du modèle de secours."]
    assert turn.outcome.iterations[0]["model"] == "backup-1"
    await llm.close()


async def test_provider_down_user_still_gets_text(fake_llm: FakeLLM) -> None:
    for _ in range(6):
        fake_llm.push_status(500)
    llm = LLMClient(make_settings(fake_llm.url, LLM_FALLBACK_MODELS="backup-1"))
    turn = await drive(llm, [ECHO])
    assert len(fake_llm.requests) == 6  # 3 attempts per model
    assert turn.outcome.exit_reason == PROVIDER_ERROR
    assert len(turn.texts) == 1 and "réessayer" in turn.texts[0]
    await llm.close()


async def test_error_object_mid_stream_is_retried(fake_llm: FakeLLM) -> None:
    fake_llm.push_raw((CORPUS / "09-openrouter-docs-midstream-error-finish-error.sse").read_bytes())
    fake_llm.push_raw((CORPUS / "11-groq-event-error-tool-use-failed-no-done.sse").read_bytes())
    fake_llm.push_text("Ça marche maintenant.")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [ECHO])
    assert turn.texts == ["Ça marche maintenant."]
    await llm.close()


async def test_every_corpus_tool_stream_runs_through_the_loop(fake_llm: FakeLLM) -> None:
    """Each recorded provider stream with tool calls, served over HTTP, gets its calls answered."""
    expected = json.loads((CORPUS / "expected.json").read_text())
    llm = LLMClient(make_settings(fake_llm.url))
    for name, want in sorted(expected.items()):
        if not want["tool_calls"]:
            continue
        fake_llm.requests.clear()
        fake_llm.push_raw((CORPUS / name).read_bytes())
        fake_llm.push_text("ok")
        turn = await drive(llm, [ECHO])  # the recorded tools are unknown here: each still gets a result
        assert turn.texts[-1] == "ok", name
        second = fake_llm.requests[-1]["messages"]
        calls = [c for m in second if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        assert [c["function"]["name"] for c in calls] == [c["name"] for c in want["tool_calls"]], name
        assert [c["id"] for c in calls] == [m["tool_call_id"] for m in second if m["role"] == "tool"], name
        for c in calls:
            json.loads(c["function"]["arguments"])
    await llm.close()


def _recording_tool(name: str, log: list[str], exclusive: bool) -> Tool:
    async def run(_ctx: ToolContext, args: dict) -> dict:
        log.append(f"start {args['k']}")
        await asyncio.sleep(0.05)
        log.append(f"end {args['k']}")
        return {"success": True}

    schema = {"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["k"]}
    return Tool(name, name, schema, frozenset({"child"}), run, exclusive=exclusive)


async def test_calls_run_concurrently_unless_exclusive_results_in_order(fake_llm: FakeLLM) -> None:
    log: list[str] = []
    shared = _recording_tool("shared", log, exclusive=False)
    alone = _recording_tool("alone", log, exclusive=True)
    fake_llm.push_tool_calls(
        ("shared", {"k": 1}), ("shared", {"k": 2}), ("alone", {"k": 3}), ("alone", {"k": 4})
    )
    fake_llm.push_text("ok")
    llm = LLMClient(make_settings(fake_llm.url))
    await drive(llm, [shared, alone])
    # 1 and 2 overlap; 3 and 4 each run alone, in order, after them.
    assert set(log[:2]) == {"start 1", "start 2"}
    assert log[4:] == ["start 3", "end 3", "start 4", "end 4"]
    ids = [c["id"] for c in fake_llm.requests[1]["messages"][-5]["tool_calls"]]
    assert [m["tool_call_id"] for m in tool_messages(fake_llm.requests[1])] == ids
    await llm.close()


async def test_redacted_arguments_in_history_but_tool_gets_the_real_ones(fake_llm: FakeLLM) -> None:
    fake_llm.push_tool_calls(("echo", {"x": 42}))
    fake_llm.push_text("ok")
    llm = LLMClient(make_settings(fake_llm.url))
    turn = await drive(llm, [ECHO], redact_arguments=lambda name, args: "{}" if name == "echo" else args)
    second = fake_llm.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert json.loads(second[-1]["content"])["echo"] == {"x": 42}
    assert turn.outcome.new_messages[0]["tool_calls"][0]["function"]["arguments"] == "{}"
    await llm.close()
