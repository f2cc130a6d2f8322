"""Whole turns, before and after: bytes and tokens per call and per turn, the cached share, credits.

The real loop (bot.agent.loop.run_turn) drives each scenario against a local OpenAI-compatible
server that plays the model from a script and plays the provider's cache as OpenAI documents it:
a prompt of 1,024 tokens or more has the part it shares with an earlier request of the same
conversation cached, in steps of 128 tokens. Tokens are bytes / 4 (no tokenizer is bundled).
"Before" is the prompt and schemas of bench/cost/baseline.json, with every cached token charged in
full (the code did not read them); "after" is the code as it is, cached tokens charged at
CACHED_TOKENS_FACTOR. Tools return a small result at once: what is measured is what is sent.
"""

from __future__ import annotations

import asyncio
import json
import socket
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bot.agent.llm import LLMClient
from bot.agent.loop import Budget, QuietSide, TurnSetup, new_state, run_turn
from bot.agent.toolspec import Tool, ToolContext
from bot.billing.credits import turn_cost
from bot.config import Limits, load_settings

TOKENS_PER_CREDIT = 2000
CACHE_MIN, CACHE_STEP = 1024, 128
DOC_MARKDOWN = "# Bilan SYSCOHADA 2026\n\n" + "\n\n".join(
    f"## Partie {i}\n\n" + "Le bilan présente l'actif et le passif de l'entité. " * 6 for i in range(1, 6))
SCENARIOS = {
    "plain question": ("Bonjour, c'est quoi une fraction ?", []),
    "quiz": ("Fais-moi un quiz sur les fractions.", [
        ("interactive_quiz", {"question": "Combien font 1/2 + 1/4 ?", "options": ["3/4", "2/6", "1/8"],
                              "correct_index": 0, "explanation": "1/2 = 2/4, et 2/4 + 1/4 = 3/4."})]),
    "document": ("Fais-moi le bilan SYSCOHADA en Word.", [
        ("generate_docx", {"title": "Bilan SYSCOHADA 2026", "markdown": DOC_MARKDOWN})]),
    "10-iteration turn": ("Recherche les normes SYSCOHADA actuelles, partie par partie.", [
        ("web_search", {"query": f"SYSCOHADA révisé partie {i}"}) for i in range(1, 10)]),
}
ANSWER = "Voilà : " + "une réponse claire et complète. " * 12


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class _Provider:
    """The model's script and the provider's prefix cache, per conversation."""

    scripts: dict[str, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)
    seen: dict[str, list[bytes]] = field(default_factory=dict)
    calls: list[dict[str, int]] = field(default_factory=list)

    def usage(self, key: str, raw: bytes) -> dict[str, Any]:
        prompt = len(raw) // 4
        shared = max((_common(raw, earlier) for earlier in self.seen.get(key, [])), default=0) // 4
        cached = (shared // CACHE_STEP) * CACHE_STEP if prompt >= CACHE_MIN and shared >= CACHE_MIN else 0
        self.seen.setdefault(key, []).append(raw)
        self.calls.append({"bytes": len(raw), "prompt": prompt, "cached": cached})
        return {"prompt_tokens": prompt, "completion_tokens": 60, "total_tokens": prompt + 60,
                "prompt_tokens_details": {"cached_tokens": cached}}

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = json.loads(raw)
        # The request as the provider sees it: the messages and tools, not the transport fields.
        seen = json.dumps({"tools": body.get("tools"), "messages": body["messages"]}, ensure_ascii=False)
        key = body["messages"][1]["content"]
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        script = self.scripts[key]
        usage = self.usage(key, seen.encode())
        if done < len(script) and body.get("tool_choice") != "none":
            name, args = script[done]
            call = {"index": 0, "id": f"call_{done}", "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
            delta: dict[str, Any] = {"role": "assistant", "tool_calls": [call]}
            finish = "tool_calls"
        else:
            delta, finish = {"role": "assistant", "content": ANSWER}, "stop"
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for chunk in ({"choices": [{"index": 0, "delta": delta}]},
                      {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
                      {"choices": [], "usage": usage}):
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        return resp


def _common(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


async def _stub(_ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    return {"success": True, "result": "ok", "items": 3}


def _tools(schemas: list[dict[str, Any]]) -> list[Tool]:
    return [Tool(s["function"]["name"], s["function"].get("description", ""), s["function"]["parameters"],
                 frozenset({"child", "pro"}), _stub) for s in schemas]


def _ctx(_call: Any) -> ToolContext:
    return ToolContext(services=None, user_id=1, conversation_id=1, channel="cli",  # type: ignore[arg-type]
                       mode="pro", language="fr")


async def _turn(llm: LLMClient, prompt: dict[str, Any], question: str, factor: float) -> int:
    """Runs one turn; returns the credits it was charged (TOKENS_PER_CREDIT, cached at `factor`)."""
    charged = [0]

    async def spend(tokens: int) -> None:
        charged[0] += tokens

    limits = Limits(cached_tokens_factor=factor)
    messages = [{"role": "system", "content": prompt["system"]}, {"role": "user", "content": question}]
    state = new_state(messages, timeout_s=limits.turn_timeout_s)
    setup = TurnSetup(tools=_tools(prompt["tools"]), mode="pro", limits=limits, budget=Budget(None, spend),
                      context_tokens=200_000)
    async for _ in run_turn(llm, state, setup, QuietSide(_ctx)):
        pass
    return turn_cost(charged[0], TOKENS_PER_CREDIT)


async def measure(prompts: dict[str, dict[str, dict[str, Any]]], factor_after: float) -> list[dict[str, Any]]:
    """One row per mode, scenario and version ("before"/"after")."""
    provider = _Provider(scripts={q: s for q, s in SCENARIOS.values()})
    app = web.Application()
    app.router.add_post("/v1/chat/completions", provider.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = _free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    llm = LLMClient(load_settings({"LLM_BASE_URL": f"http://127.0.0.1:{port}/v1", "LLM_API_KEY": "x",
                                   "LLM_MODEL": "bench", "LLM_MAX_RETRIES": "0"}))
    rows = []
    try:
        for mode in ("child", "pro"):
            for name, (question, _script) in SCENARIOS.items():
                for version, factor in (("before", 1.0), ("after", factor_after)):
                    provider.calls.clear()
                    provider.seen.clear()
                    credits = await _turn(llm, prompts[version][mode], question, factor)
                    rows.append(_row(mode, name, version, provider.calls, credits))
    finally:
        await llm.close()
        await runner.cleanup()
    return rows


def _row(mode: str, scenario: str, version: str, calls: list[dict[str, int]], credits: int) -> dict[str, Any]:
    n = len(calls)
    total_bytes = sum(c["bytes"] for c in calls)
    prompt = sum(c["prompt"] for c in calls)
    cached = sum(c["cached"] for c in calls)
    return {"mode": mode, "scenario": scenario, "version": version, "calls": n,
            "bytes/call": total_bytes // max(1, n), "tokens/call": prompt // max(1, n),
            "tokens/turn": prompt, "cached": f"{cached / prompt:.0%}" if prompt else "-", "credits": credits}


def run(prompts: dict[str, dict[str, dict[str, Any]]], factor_after: float = 0.25) -> list[dict[str, Any]]:
    return asyncio.run(measure(prompts, factor_after))


# --- time to the first WhatsApp message --------------------------------------------------------

LONG_ANSWER = "\n\n".join(
    f"Partie {i}. " + "Le bilan SYSCOHADA présente l'actif, le passif et les capitaux propres. " * 5
    for i in range(1, 5))[:1500]
TOKENS_PER_S = 30
CHARS_PER_TOKEN = 4


async def _stream_answer(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for i in range(0, len(LONG_ANSWER), CHARS_PER_TOKEN):
        piece = LONG_ANSWER[i:i + CHARS_PER_TOKEN]
        await resp.write(f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': piece}}]})}\n\n"
                         .encode())
        await asyncio.sleep(1 / TOKENS_PER_S)
    await resp.write(b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n')
    await resp.write(b"data: [DONE]\n\n")
    return resp


async def first_message() -> dict[str, float]:
    """Seconds from the model's first token to the first WhatsApp message: whole answer (before)
    and paragraph by paragraph (after, bot.channel.streaming's splitter, sent as it completes)."""
    from bot.channel.streaming import ParagraphSplitter

    app = web.Application()
    app.router.add_post("/v1/chat/completions", _stream_answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = _free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    llm = LLMClient(load_settings({"LLM_BASE_URL": f"http://127.0.0.1:{port}/v1", "LLM_API_KEY": "x",
                                   "LLM_MODEL": "bench"}))
    loop = asyncio.get_running_loop()
    splitter, marks = ParagraphSplitter(), {}

    def on_text(chunk: str) -> None:
        marks.setdefault("first_token", loop.time())
        if splitter.feed(chunk):
            marks.setdefault("first_paragraph", loop.time())

    try:
        await llm.chat([{"role": "user", "content": "Explique le bilan."}], on_text=on_text)
        marks["end"] = loop.time()
    finally:
        await llm.close()
        await runner.cleanup()
    return {"before": marks["end"] - marks["first_token"],
            "after": marks["first_paragraph"] - marks["first_token"], "chars": float(len(LONG_ANSWER))}
