"""Mode sets by name, truncation limits, history loading, prompts, the killable runner."""

from __future__ import annotations

import json
from typing import Any

import pytest

import tools
from bot.agent import history
from bot.agent.executor import parse_arguments
from bot.agent.prompts import build_system_prompt, stable_prefix
from bot.agent.truncation import fit_context, total_tokens, truncate_result
from bot.config import load_settings
from bot.sandbox.killable import KillableError, pid_alive, run_killable
from bot.storage.models import Conversation, Message, User
from tests.support.killable_targets import fail, sleep_then, write_pid_and_spin
from tools.registry import ALL_TOOL_NAMES, MODE_TOOLS

SEED_TOOLS = {
    "generate_xlsx",
    "generate_pdf",
    "generate_pptx",
    "generate_docx",
    "generate_html",
    "generate_md",
    "send_email_to_user",
    "draft_email",
    "send_sms_to_user",
    "send_whatsapp_to_user",
    "list_user_files",
    "read_user_file",
    "search_user_files",
    "save_memory",
    "bash_execute",
    "web_search",
    "browse_url",
    "interactive_quiz",
    "true_false_quiz",
    "award_bonus_credits",
    "report_exercise_result",
    "create_task",
    "buy_credits",
    "report_bug",
}


def test_mode_sets_by_name() -> None:
    assert set(ALL_TOOL_NAMES) == SEED_TOOLS and len(ALL_TOOL_NAMES) == 24
    assert MODE_TOOLS["guest"] == frozenset()
    assert MODE_TOOLS["child"] == SEED_TOOLS - {"bash_execute", "draft_email"}
    assert len(MODE_TOOLS["child"]) == 22
    assert MODE_TOOLS["pro"] == SEED_TOOLS


def test_registry_offers_only_known_tools_in_their_modes() -> None:
    settings = load_settings({})
    registered = {t.name for t in tools.all_tools()}
    assert registered <= SEED_TOOLS  # no placeholder or stray names
    assert tools.for_mode("guest", settings) == []
    for mode in ("child", "pro"):
        for tool in tools.for_mode(mode, settings):
            assert tool.name in MODE_TOOLS[mode]
            assert mode in tool.modes
    assert not {t.name for t in tools.for_mode("child", settings)} & {"bash_execute", "draft_email"}


def test_truncation_limits_and_markers() -> None:
    page = truncate_result("browse_url", {"content": "é" * 50_000, "url": "u"})
    assert page["content"].startswith("é" * 8_000) and "showing 8,000 of 50,000" in page["content"]
    search = truncate_result(
        "web_search", {"results": [{"title": str(i), "content": "a" * 3000} for i in range(9)]}
    )
    assert len(search["results"]) == 5 and "showing 5 of 9 results" in search["results_note"]
    assert all(r["content"].startswith("a" * 1500) and "of 3,000" in r["content"] for r in search["results"])
    out = "".join(f"line {i}\n" for i in range(5000)) + "Traceback: ValueError at the end"
    bash = truncate_result("bash_execute", {"stdout": out, "exit_code": 1})
    assert bash["stdout"].startswith("line 0") and bash["stdout"].endswith("ValueError at the end")
    assert f"of {len(out):,}" in bash["stdout"] and len(bash["stdout"]) < 4_200
    file = truncate_result("read_user_file", {"content": "z" * 9000})
    assert "showing 8,000 of 9,000" in file["content"]
    small = {"success": True, "content": "court"}
    assert truncate_result("browse_url", small) == small
    other = truncate_result("anything", {"blob": "b" * 100_000})
    assert len(json.dumps(other)) < 17_000


def test_fit_context_keeps_pairs_question_and_system() -> None:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "S"}]
    for i in range(30):
        msgs += [
            {"role": "user", "content": f"u{i} " + "x" * 1000},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": f"c{i}", "content": "r" * 5000},
            {"role": "assistant", "content": f"a{i}"},
        ]
    msgs.append({"role": "user", "content": "LAST"})
    fitted = fit_context(msgs, 3000)
    assert total_tokens(fitted) <= 3000
    assert fitted[0]["content"] == "S" and fitted[-1]["content"] == "LAST"
    ids = [c["id"] for m in fitted if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert ids == [m["tool_call_id"] for m in fitted if m["role"] == "tool"]
    assert msgs[3]["content"] == "r" * 5000  # the caller's list is not modified


def test_argument_repair() -> None:
    assert parse_arguments('```json\n{"a": 1,}\n```') == ({"a": 1}, None)
    assert parse_arguments('Calling tools: {"a": [1, 2,]}') == ({"a": [1, 2]}, None)
    assert parse_arguments('"{\\"a\\": 2}"') == ({"a": 2}, None)
    assert parse_arguments("") == ({}, None)
    assert parse_arguments(None) == ({}, None)
    value, error = parse_arguments("[1, 2]")
    assert value is None and "JSON object" in (error or "")


async def test_history_load_budget_pairs_and_interrupted_calls(harness: Any) -> None:
    async with harness.services.sessions() as db:
        user = User(phone="+2250100000009", mode="pro")
        db.add(user)
        await db.flush()
        conv = Conversation(user_id=user.id)
        db.add(conv)
        await db.flush()
        rows: list[dict[str, Any]] = []
        for i in range(50):
            rows += [
                {"role": "user", "content": f"q{i} " + "x" * 700},
                {"role": "assistant", "content": f"a{i}"},
            ]
        call = {"id": "k1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        call2 = {"id": "k2", "type": "function", "function": {"name": "g", "arguments": "{}"}}
        rows += [
            {"role": "user", "content": "avant le crash"},
            {"role": "assistant", "content": None, "tool_calls": [call, call2]},
            {"role": "tool", "tool_call_id": "k1", "content": '{"ok": 1}'},
        ]
        await history.save(db, conv.id, rows, inbound_id=7)
        await db.commit()
        loaded = await history.load(db, conv.id, 2000)
        assert sum(len(m.get("content") or "") for m in loaded) / 3.5 <= 2100
        assert loaded[0]["role"] == "user"
        assert loaded[-3]["tool_calls"] == [call, call2]
        assert loaded[-2]["tool_call_id"] == "k1" and loaded[-1]["tool_call_id"] == "k2"
        assert "interrupted" in loaded[-1]["content"]
        assert await history.user_message_saved(db, conv.id, 7)
        assert await history.used_tool_call_ids(db, conv.id) == {"k1"}
        count = len(
            (await db.scalars(Message.__table__.select().where(Message.conversation_id == conv.id))).all()
        )
        assert count == 103


def test_prompts_per_mode_and_language() -> None:
    child = build_system_prompt("child", user=None, language="fr")
    assert "socratique" in child and "JAMAIS directement la réponse" in child
    pro = build_system_prompt("pro", language="en", memories=["likes tables"])
    assert "SYSCOHADA" in pro and "OHADA" in pro and "English" in pro and "likes tables" in pro
    assert pro.startswith(stable_prefix("pro"))
    assert "sans outils" in build_system_prompt("guest")
    assert stable_prefix("nonsense") == stable_prefix("guest")


async def test_killable_result_error_and_kill(tmp_path: Any) -> None:
    assert await run_killable(sleep_then, 5, 0.0, timeout_s=30) == 5
    with pytest.raises(KillableError, match="bad input"):
        await run_killable(fail, timeout_s=30)
    pid_file = tmp_path / "pid"
    with pytest.raises(TimeoutError):
        await run_killable(write_pid_and_spin, str(pid_file), timeout_s=2.0)
    assert not pid_alive(int(pid_file.read_text()))
