"""Benchmark of the agent loop. Run: `.venv/bin/python -m bench.loop` (loopback only, ~1 minute).

(a) Overhead per iteration: the same local instant LLM server and the same tool, driven by
    Deblo's loop, the OpenAI Agents SDK and pydantic-ai, all streaming. "raw" is the bare HTTP
    exchange (httpx, read the stream, no parsing); overhead = framework time - raw time.
(b) 500 conversations at once, 3 tool iterations each, 1 s of LLM latency per call: total time
    against the ideal 4 s (four LLM calls of 1 s), and the peak memory of the client process.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import json
import socket
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.compare import Figure, add_arguments, compare, report, unavailable  # noqa: E402
from bench.loop.server import start_in_process  # noqa: E402
from bot.agent.events import Final  # noqa: E402
from bot.agent.llm import LLMClient  # noqa: E402
from bot.agent.loop import QuietSide, TurnSetup, new_state, run_turn  # noqa: E402
from bot.agent.toolspec import Tool, ToolContext  # noqa: E402
from bot.config import Limits, load_settings  # noqa: E402

TOOL_ROUNDS = 3
SYSTEM = "Tu es un assistant de calcul. Utilise l'outil add."
QUESTION = "Additionne 1 et 2 trois fois."
ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _add(_ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    return {"success": True, "sum": args["a"] + args["b"]}


ADD = Tool("add", "Adds two integers.", ADD_SCHEMA, frozenset({"pro"}), _add)


def _ctx(call: Any) -> ToolContext:
    return ToolContext(
        services=None,
        user_id=1,
        conversation_id=1,
        channel="cli",  # type: ignore[arg-type]
        mode="pro",
        language="fr",
        tool_call_id=call.id,
    )


# --- drivers: each runs one conversation (TOOL_ROUNDS tool calls, then the answer) ----------


async def deblo_driver(url: str) -> tuple[Any, Any]:
    settings = load_settings({"LLM_BASE_URL": url, "LLM_MODEL": "bench", "LLM_API_KEY": "x",
                              "LLM_MAX_CONCURRENCY": "100000"})  # the cap is not what is measured
    llm = LLMClient(settings)
    limits = Limits()

    async def one() -> None:
        final = None
        state = new_state([{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}],
                          timeout_s=limits.turn_timeout_s)
        async for event in run_turn(llm, state, TurnSetup(tools=[ADD], mode="pro", limits=limits),
                                    QuietSide(_ctx)):
            final = event
        assert isinstance(final, Final) and final.outcome.exit_reason == "answered", final
        assert len(final.outcome.iterations) == TOOL_ROUNDS + 1

    return one, llm.close


async def raw_driver(url: str) -> tuple[Any, Any]:
    """The bare HTTP exchanges with aiohttp (the cheapest client here): no parsing, no loop."""
    import aiohttp

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    tools = [ADD.openai_schema()]

    async def one() -> None:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": QUESTION},
        ]
        for i in range(TOOL_ROUNDS + 1):
            body = {"model": "bench", "messages": messages, "stream": True, "tools": tools}
            async with session.post(
                url + "/chat/completions", data=json.dumps(body), headers={"Content-Type": "application/json"}
            ) as resp:
                async for _ in resp.content.iter_any():
                    pass
            if i < TOOL_ROUNDS:
                call = {"id": f"call_{i}", "type": "function", "function": {"name": "add", "arguments": "{}"}}
                messages = [
                    *messages,
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": f"call_{i}", "content": '{"sum": 3}'},
                ]

    return one, session.close


async def openai_agents_driver(url: str) -> tuple[Any, Any]:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=url, api_key="x", max_retries=0)

    @function_tool
    def add(a: int, b: int) -> int:
        """Adds two integers."""
        return a + b

    agent = Agent(
        name="bench",
        instructions=SYSTEM,
        tools=[add],
        model=OpenAIChatCompletionsModel(model="bench", openai_client=client),
    )

    async def one() -> None:
        result = Runner.run_streamed(agent, QUESTION, max_turns=10)
        async for _ in result.stream_events():
            pass
        assert "42" in str(result.final_output)

    return one, client.close


async def pydantic_ai_driver(url: str) -> tuple[Any, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("bench", provider=OpenAIProvider(base_url=url, api_key="x"))
    agent = Agent(model, instructions=SYSTEM)

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Adds two integers."""
        return a + b

    async def one() -> None:
        async with agent.run_stream(QUESTION) as result:
            output = await result.get_output()
        assert "42" in str(output)

    return one, (lambda: asyncio.sleep(0))


DRIVERS = {
    "raw HTTP (aiohttp)": raw_driver,
    "Deblo loop": deblo_driver,
    "OpenAI Agents SDK": openai_agents_driver,
    "pydantic-ai": pydantic_ai_driver,
}


async def measure_overhead(url: str, turns: int, rounds: int) -> dict[str, dict[str, float]]:
    """Interleaved rounds so that drift on the machine hits every framework alike."""
    drivers = {name: await make(url) for name, make in DRIVERS.items()}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in drivers}
    for one, _close in drivers.values():
        for _ in range(5):  # warm-up: imports, connection pools, caches
            await one()
    for _ in range(rounds):
        for name, (one, _close) in drivers.items():
            gc.collect()
            wall0, cpu0 = time.perf_counter(), time.process_time()
            for _ in range(turns):
                await one()
            iterations = turns * (TOOL_ROUNDS + 1)
            samples[name].append(
                (
                    (time.perf_counter() - wall0) / iterations * 1e3,
                    (time.process_time() - cpu0) / iterations * 1e3,
                )
            )
    for _one, close in drivers.values():
        await close()
    return {
        name: {"wall_ms": statistics.median(w for w, _ in s), "cpu_ms": statistics.median(c for _, c in s)}
        for name, s in samples.items()
    }


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def measure_concurrency(url: str, conversations: int) -> list[dict[str, float]]:
    """Two batches on one client: connections opened during the first (cold), reused by the second.
    The collector is tuned as `serve` and `worker` tune it (bot.cli.tune_gc)."""
    from bot.cli import tune_gc

    tune_gc()
    settings = load_settings({"LLM_BASE_URL": url, "LLM_MODEL": "bench", "LLM_API_KEY": "x",
                              "LLM_MAX_CONCURRENCY": "100000"})  # the cap is not what is measured
    llm = LLMClient(settings)
    limits = Limits()

    async def one() -> int:
        final = None
        state = new_state([{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}],
                          timeout_s=limits.turn_timeout_s)
        async for event in run_turn(llm, state, TurnSetup(tools=[ADD], mode="pro", limits=limits),
                                    QuietSide(_ctx)):
            final = event
        assert isinstance(final, Final)
        return len(final.outcome.iterations) if final.outcome.exit_reason == "answered" else -1

    rows = []
    for label in ("cold pool", "warm pool"):
        gc.collect()
        peak = [rss_mb()]
        before = peak[0]
        stop = asyncio.Event()

        async def sample(peak: list[float] = peak, stop: asyncio.Event = stop) -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], rss_mb())
                await asyncio.sleep(0.05)

        sampler = asyncio.create_task(sample())
        start, cpu = time.perf_counter(), time.process_time()
        results = await asyncio.gather(*(one() for _ in range(conversations)))
        total, cpu = time.perf_counter() - start, time.process_time() - cpu
        stop.set()
        await sampler
        rows.append(
            {
                "label": label,
                "total_s": total,
                "cpu_s": cpu,
                "ideal_s": float(TOOL_ROUNDS + 1),
                "ok": sum(1 for r in results if r == TOOL_ROUNDS + 1),
                "rss_before_mb": before,
                "rss_peak_mb": peak[0],
            }
        )
    await llm.close()
    return rows  # type: ignore[return-value]


async def measure_concurrency_raw(url: str, conversations: int) -> dict[str, Any]:
    """The floor on this machine: the same exchanges with bare aiohttp, no loop, warm pool."""
    one, close = await raw_driver(url)
    await asyncio.gather(*(one() for _ in range(conversations)))  # opens the connections
    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one() for _ in range(conversations)))
    row = {
        "label": "raw HTTP",
        "total_s": time.perf_counter() - start,
        "cpu_s": time.process_time() - cpu,
        "ideal_s": float(TOOL_ROUNDS + 1),
        "ok": conversations,
        "rss_before_mb": rss_mb(),
        "rss_peak_mb": rss_mb(),
    }
    await close()
    return row


EXTRA = ("agents", "pydantic_ai")  # the frameworks (a) compares with: the `bench` extra
FIGURES = {
    "deblo_wall": Figure("Deblo ms/iter", False, 3), "deblo_cpu": Figure("Deblo CPU ms/iter", False, 3),
    "deblo_overhead": Figure("Deblo overhead ms", False, 3), "raw_wall": Figure("raw ms/iter", False, 3),
    **{f"{key}_{part}": Figure(f"{label} {unit}", False, digits) for key, label in
       (("cold", "cold pool"), ("warm", "warm pool"))
       for part, unit, digits in (("total", "s", 2), ("cpu", "CPU s", 2), ("rss", "RSS MB", 1))},
}


def figures(over: dict[str, dict[str, float]], conc: list[dict[str, float]]) -> dict[str, float]:
    deblo, raw = over["Deblo loop"], over["raw HTTP (aiohttp)"]
    rows = {str(r["label"]).split()[0]: r for r in conc}
    return {"deblo_wall": deblo["wall_ms"], "deblo_cpu": deblo["cpu_ms"],
            "deblo_overhead": deblo["wall_ms"] - raw["wall_ms"], "raw_wall": raw["wall_ms"],
            **{f"{key}_{part}": rows[key][field] for key in ("cold", "warm")
               for part, field in (("total", "total_s"), ("cpu", "cpu_s"), ("rss", "rss_peak_mb"))}}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=25, help="conversations per round in (a)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds in (a)")
    parser.add_argument("--conversations", type=int, default=500, help="concurrent conversations in (b)")
    add_arguments(parser)
    args = parser.parse_args()
    missing = [name for name in EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        unavailable("bench.loop", f"needs the optional 'bench' extra (pip install -e '.[bench]'); "
                    f"missing: {', '.join(missing)}")
    if compare(args, "bench.loop", FIGURES):
        return

    slow_port, fast_port = free_port(), free_port()
    slow = start_in_process(slow_port, TOOL_ROUNDS, 1.0)
    fast = start_in_process(fast_port, TOOL_ROUNDS, 0.0)
    try:
        # (b) first, in a process that has not yet imported the other frameworks.
        conc = asyncio.run(measure_concurrency(f"http://127.0.0.1:{slow_port}/v1", args.conversations))
        conc.append(
            asyncio.run(measure_concurrency_raw(f"http://127.0.0.1:{slow_port}/v1", args.conversations))
        )
        over = asyncio.run(measure_overhead(f"http://127.0.0.1:{fast_port}/v1", args.turns, args.rounds))
    finally:
        slow.kill()
        fast.kill()

    if args.json:
        report("bench.loop", FIGURES, figures(over, conc))
        return
    raw = over["raw HTTP (aiohttp)"]
    print(
        f"\n(a) per-iteration cost, {TOOL_ROUNDS + 1} LLM calls per conversation, "
        f"{args.turns} conversations x {args.rounds} rounds, median of rounds"
    )
    print(f"{'driver':<22} {'wall ms/iter':>13} {'client CPU ms/iter':>19} {'overhead ms/iter':>17}")
    for name, m in over.items():
        overhead = m["wall_ms"] - raw["wall_ms"]
        print(
            f"{name:<22} {m['wall_ms']:>13.3f} {m['cpu_ms']:>19.3f} "
            f"{'-' if name == 'raw HTTP (aiohttp)' else f'{overhead:.3f}':>17}"
        )
    others = [over[n]["wall_ms"] - raw["wall_ms"] for n in ("OpenAI Agents SDK", "pydantic-ai")]
    ours = over["Deblo loop"]["wall_ms"] - raw["wall_ms"]
    print(f"Deblo overhead / fastest other framework's overhead: {ours / min(others):.2f} (aim <= 0.33)")

    print(
        f"\n(b) {args.conversations} concurrent conversations, {TOOL_ROUNDS} tool iterations each, "
        "1 s LLM latency per call"
    )
    print(
        f"{'run':<10} {'total s':>8} {'ideal s':>8} {'vs ideal':>9} {'client CPU s':>13} {'answered':>9} "
        f"{'RSS before MB':>14} {'RSS peak MB':>12}"
    )
    for row in conc:
        print(
            f"{row['label']:<10} {row['total_s']:>8.2f} {row['ideal_s']:>8.1f} "
            f"{row['total_s'] / row['ideal_s'] - 1:>+9.1%} {row['cpu_s']:>13.2f} {int(row['ok']):>9} "
            f"{row['rss_before_mb']:>14.1f} {row['rss_peak_mb']:>12.1f}"
        )


if __name__ == "__main__":
    main()
