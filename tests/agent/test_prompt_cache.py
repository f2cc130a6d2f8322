"""A prefix providers can cache: the stable part first and byte-identical, the hints each provider
understands (`prompt_cache_key`, `cache_control`), and the cached tokens it reports read back."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from bot.agent.llm import LLMClient, mark_stable_prefix, prompt_cache_key
from bot.agent.prompts import PERSONAL_HEADING, build_system_prompt, stable_prefix
from tests.fakes.llm import FakeLLM
from tests.support.agent_loop import make_settings

CACHED_USAGE = {"prompt_tokens": 9000, "completion_tokens": 40, "total_tokens": 9040,
                "prompt_tokens_details": {"cached_tokens": 8192}}


def _system(mode: str, name: str, lang: str, minute: int, memories: tuple[str, ...] = ()) -> str:
    user = SimpleNamespace(display_name=name, school_level="3e", role="student", timezone=None)
    return build_system_prompt(mode, user=user, language=lang, memories=memories,
                               now=datetime(2026, 12, 1, 8, minute, tzinfo=UTC))


def test_the_stable_prefix_is_the_same_bytes_for_every_person_and_minute() -> None:
    for mode in ("guest", "child", "pro"):
        a = _system(mode, "Awa", "fr", 1, ("aime le foot",))
        b = _system(mode, "Koffi", "en", 59)
        head = stable_prefix(mode) + "\n\n" + PERSONAL_HEADING
        assert a.startswith(head) and b.startswith(head)
        # What changes (who, language, memories, the time) all comes after it.
        assert "Awa" not in head and "Koffi" not in head and "2026" not in head


def test_cache_control_marks_exactly_the_stable_prefix() -> None:
    system = _system("child", "Awa", "fr", 5)
    marked = mark_stable_prefix([{"role": "system", "content": system}, {"role": "user", "content": "x"}])
    first, rest = marked[0]["content"]
    assert first == {"type": "text", "text": stable_prefix("child"), "cache_control": {"type": "ephemeral"}}
    assert first["text"] + rest["text"] == system and "cache_control" not in rest
    assert marked[1] == {"role": "user", "content": "x"}


async def _ask(fake_llm: FakeLLM, **env: str) -> tuple[Any, dict[str, Any]]:
    llm = LLMClient(make_settings(fake_llm.url, **env))
    try:
        fake_llm.push_text("Bonjour.", usage=CACHED_USAGE)
        resp = await llm.chat([{"role": "system", "content": _system("pro", "Awa", "fr", 3)},
                               {"role": "user", "content": "Bonjour"}], cache_key="user-42")
    finally:
        await llm.close()
    return resp, fake_llm.requests[-1]


async def test_cached_tokens_are_read_from_the_usage(fake_llm: FakeLLM) -> None:
    resp, _ = await _ask(fake_llm)
    assert resp.prompt_tokens == 9000 and resp.cached_tokens == 8192 and not resp.usage_estimated


async def test_the_hints_follow_the_settings(fake_llm: FakeLLM) -> None:
    _, plain = await _ask(fake_llm)  # auto, and the server is not a provider known to take them
    assert "prompt_cache_key" not in plain and isinstance(plain["messages"][0]["content"], str)
    _, hinted = await _ask(fake_llm, LLM_PROMPT_CACHE_KEY="on", LLM_CACHE_CONTROL="on")
    assert hinted["prompt_cache_key"] == "user-42"
    assert hinted["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    _, off = await _ask(fake_llm, LLM_PROMPT_CACHE_KEY="off", LLM_CACHE_CONTROL="off")
    assert "prompt_cache_key" not in off


async def test_cached_tokens_are_charged_at_the_factor(make_harness: Any) -> None:
    from sqlalchemy import select

    from bot.storage.models import CreditEntry, TurnRecord

    h = await make_harness(LLM_PROMPT_CACHE_KEY="on", TOKENS_PER_CREDIT="1000", CACHED_TOKENS_FACTOR="0.25")
    user = await h.make_user("+2250700000161", mode="child")
    h.llm.push_text("Bonjour !", usage=CACHED_USAGE)
    await h.inbound("+2250700000161", "Bonjour")
    await h.settle()
    # 9,000 prompt tokens of which 8,192 cached: 808 + 8,192 × 0.25 + 40 = 2,896 → 3 credits, not 10.
    async with h.services.sessions() as db:
        usage = (await db.scalars(select(CreditEntry.delta).where(CreditEntry.reason == "usage"))).all()
        [turn] = (await db.scalars(select(TurnRecord))).all()
    assert sum(usage) == -3
    assert turn.detail["iterations"][0]["cached_tokens"] == 8192
    # One key per user, derived with the bot's secret: the provider groups calls, learns no id.
    assert h.llm.requests[0]["prompt_cache_key"] == prompt_cache_key(h.settings.secret_key, user.id)
