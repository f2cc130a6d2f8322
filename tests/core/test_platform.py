"""Migrations, readiness, module boundaries, logs, jobs, formatting rules and the command line."""

from __future__ import annotations

import ast
import asyncio
import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bot import logs
from bot.channel import formatting
from bot.channel.web import create_app
from bot.clock import ManualClock
from bot.config import load_settings
from bot.periodic import Job
from bot.services import build_services
from bot.storage.db import make_engine
from bot.storage.migrate import schema_differences
from tests.support.harness import Harness
from tests.support.processes import start_up_lines

ROOT = Path(__file__).resolve().parents[2]


# --- schema ----------------------------------------------------------------------------------


async def test_migrations_match_the_models(migrated_template: str) -> None:
    """Changing bot/storage/models.py needs a migration: autogenerate must find nothing to do."""
    engine = make_engine(migrated_template)
    try:
        assert await schema_differences(engine) == []
    finally:
        await engine.dispose()


# --- readiness ---------------------------------------------------------------------------------


async def test_readyz_reports_redis_down(tmp_path: Path, test_database: Any) -> None:
    settings = load_settings({"DATA_DIR": str(tmp_path), "DATABASE_URL": test_database.url,
                              "REDIS_URL": "redis://127.0.0.1:9/0"})
    services = await build_services(settings)
    runner = web.AppRunner(create_app(services), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/readyz") as resp:
                assert resp.status == 503
                assert await resp.json() == {"ready": False, "database": True, "state": False}
            async with session.get(f"http://127.0.0.1:{port}/healthz") as resp:
                assert resp.status == 200  # alive, just not ready
    finally:
        await runner.cleanup()
        await services.close()


async def test_readyz_reports_the_database_down(tmp_path: Path) -> None:
    settings = load_settings({"DATA_DIR": str(tmp_path),
                              "DATABASE_URL": "postgresql+asyncpg://postgres@127.0.0.1:9/none"})
    services = await build_services(settings)
    runner = web.AppRunner(create_app(services), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/readyz") as resp:
            assert resp.status == 503
            assert (await resp.json())["database"] is False
    finally:
        await runner.cleanup()
        await services.close()


# --- boundaries --------------------------------------------------------------------------------


# Which part of bot/ may import which. A module belongs to the first name here that is its own or a
# parent of it; it may import its own part and the parts listed. Lower parts first: the base, storage,
# the services, then the channel and the agent (never each other), then the domains (each says which
# other domains it builds on), then the edges (web pages, the operator's console, doctor, the
# pipeline: any domain, never each other), then the composition root.
BASE = {"bot.config", "bot.config_values", "bot.config_groups", "bot.config_secrets", "bot.logs",
        "bot.metrics", "bot.clock", "bot.credentials", "bot.render", "bot.texts", "bot.e5",
        "bot.formats", "bot.lanes"}
CORE = BASE | {"bot.storage", "bot.services", "bot.periodic", "bot.channel", "bot.agent"}
DOMAINS: dict[str, set[str]] = {
    "bot.sandbox": set(),
    "bot.billing": set(),
    "bot.jobs": set(),
    "bot.safety": set(),
    "bot.assistant": set(),
    "bot.documents": {"bot.sandbox"},
    "bot.accounts": {"bot.billing"},
    "bot.library": {"bot.documents"},
    "bot.learning": {"bot.documents"},
    "bot.media": {"bot.library", "bot.billing", "bot.documents"},
    "bot.school": {"bot.accounts", "bot.billing", "bot.learning", "bot.library", "bot.safety"},
}
EDGES = ("bot.web", "bot.console", "bot.doctor", "bot.pipeline")
ALLOWED: dict[str, set[str]] = {
    "bot.config": BASE, "bot.config_values": BASE, "bot.config_groups": BASE, "bot.config_secrets": BASE,
    "bot.logs": BASE, "bot.metrics": BASE, "bot.clock": BASE, "bot.credentials": BASE, "bot.texts": BASE,
    "bot.e5": BASE, "bot.formats": BASE, "bot.lanes": BASE,
    # The one Jinja2 environment: pages, e-mails and documents are all written from its templates.
    "bot.render": BASE,
    "bot.storage": BASE,
    # The container of clients; build_services makes the LLM and Twilio clients it holds.
    "bot.services": BASE | {"bot.storage", "bot.agent.llm", "bot.channel.twilio_client"},
    # What a periodic job is; the pipeline's scheduler runs them.
    "bot.periodic": BASE | {"bot.storage", "bot.services"},
    # The channel side and the agent never import each other.
    "bot.channel": BASE | {"bot.storage", "bot.services"},
    "bot.agent": BASE | {"bot.storage", "bot.services"},
    **{domain: CORE | below for domain, below in DOMAINS.items()},
    **{edge: CORE | set(DOMAINS) for edge in EDGES},
    # The composition root wires everything, handlers and tools included.
    "bot.cli": {"bot", "handlers", "tools"},
    "bot.__main__": {"bot.cli"},
    "bot": set(),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _within(name: str, part: str) -> bool:
    return name == part or name.startswith(part + ".")


def _part_of(module: str) -> str:
    return max((p for p in ALLOWED if _within(module, p)), key=len)


def _imports(path: Path, modules: set[str]) -> list[tuple[int, str]]:
    """Every import of a module (inside functions and under TYPE_CHECKING too): (line, imported module)."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from bot.x import y` imports the module bot.x.y when there is one, else names of bot.x.
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                     for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            raise AssertionError(f"{path.relative_to(ROOT)}:{node.lineno}: use absolute imports")
        found += [(node.lineno, n) for n in names]
    return found


def _project_modules() -> dict[str, Path]:
    paths = [p for top in ("bot", "handlers", "tools") for p in (ROOT / top).rglob("*.py")]
    return {_module_name(p): p for p in sorted(paths)}


def test_each_part_of_bot_imports_only_what_it_may() -> None:
    """bot/ never imports handlers or tools (only the composition root does), and its packages import
    one way: storage at the bottom, then services, then the channel and the agent (never each other),
    then the domains as DOMAINS orders them, then the edges, each on its own."""
    modules = _project_modules()
    offenders = []
    for name, path in modules.items():
        if not _within(name, "bot"):
            continue
        part = _part_of(name)
        for line, imported in _imports(path, set(modules)):
            if imported.split(".")[0] not in ("bot", "handlers", "tools") or _within(imported, part):
                continue
            if imported == "bot" or not any(_within(imported, ok) for ok in ALLOWED[part]):
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {imported} ({part} may not)")
    assert not offenders, "\n".join(offenders)


# The one circle between packages: build_services (bot.services) makes the LLM client (bot.agent.llm)
# and the Twilio client (bot.channel.twilio_client), whose packages take Services as a type.
KNOWN_PACKAGE_CIRCLE = {"bot.services", "bot.agent", "bot.channel"}


def _package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "bot" else parts[0]


def test_no_circle_between_packages_but_build_services() -> None:
    """Packages (bot.<name>, handlers, tools) import one way: a circle between them is a layering bug,
    except the documented one around build_services."""
    modules = _project_modules()
    graph: dict[str, set[str]] = {}
    for name, file in modules.items():
        mine = _package_of(name)
        imported = {_package_of(m) for _, m in _imports(file, set(modules)) if m in modules}
        graph.setdefault(mine, set()).update(imported - {mine})
    circles: list[str] = []
    for start in graph:
        seen: set[str] = set()
        todo = [(start, [start])]
        while todo:
            node, trail = todo.pop()
            for nxt in graph.get(node, ()):
                if nxt == start and not set(trail) <= KNOWN_PACKAGE_CIRCLE:
                    circles.append(" -> ".join([*trail, start]))
                elif nxt not in seen and nxt != start:
                    seen.add(nxt)
                    todo.append((nxt, [*trail, nxt]))
    assert not circles, "\n".join(sorted(circles))


def test_no_import_cycles() -> None:
    """No module imports itself through others, lazy imports and those for the type checker
    (under TYPE_CHECKING) included."""
    modules = _project_modules()
    graph = {name: sorted({m for _, m in _imports(path, set(modules)) if m in modules and m != name})
             for name, path in modules.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[str] = []

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for nxt in graph[name]:
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*path[path.index(nxt):], nxt]))
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[name] = 2

    for name in graph:
        if name not in state:
            visit(name, [name])
    assert not cycles, "\n".join(cycles)


# --- logs --------------------------------------------------------------------------------------


def test_logs_are_json_with_ids_and_masked_numbers() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    logger = logging.getLogger("test.logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    token = logs.bind(user_id=7, conversation_id=9)
    try:
        logger.info("message from whatsapp:+2250700000001", extra={"to": "+2250700000001", "n": 3})
    finally:
        logs.reset(token)
        logger.removeHandler(handler)
    entry = json.loads(stream.getvalue())
    assert entry["user_id"] == 7 and entry["conversation_id"] == 9 and entry["n"] == 3
    assert "0700000001" not in stream.getvalue()
    assert entry["msg"].startswith("message from whatsapp:+2250") and entry["msg"].endswith("01")
    assert logs.mask("CI.1234567890123") != "CI.1234567890123"


# --- jobs --------------------------------------------------------------------------------------


async def test_jobs_tick_once_per_interval_across_workers(harness: Harness) -> None:
    """Two pipelines (as two worker processes would) run a job: each tick runs once."""
    from bot.pipeline.workers import Pipeline

    h = harness
    runs: list[Any] = []

    async def job(services: Any, now: Any) -> None:
        runs.append(now)

    async def failing(services: Any, now: Any) -> None:
        raise RuntimeError("a job failure is logged, not fatal")

    jobs = [Job("count", 0.3, job), Job("failing", 0.3, failing)]
    from dataclasses import replace

    h.services.settings = replace(h.settings, jobs_enabled=True)
    first = Pipeline(h.services, lambda msg: asyncio.sleep(0, "none"), concurrency=1, jobs=jobs)
    second = Pipeline(h.services, lambda msg: asyncio.sleep(0, "none"), concurrency=1, jobs=jobs)
    await first.start()
    await second.start()
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.sleep(1.0)
    await first.stop()
    await second.stop()
    ticks = (loop.time() - started) / 0.3
    # One run per tick, not one per process per tick (which would be about twice as many).
    assert 1 <= len(runs) <= int(ticks) + 1


# --- formatting rules --------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "encoding", "segments"), [
    ("a" * 160, "GSM-7", 1), ("a" * 161, "GSM-7", 2), ("a" * 306, "GSM-7", 2), ("a" * 307, "GSM-7", 3),
    ("é" * 160, "GSM-7", 1), ("{" * 80, "GSM-7", 1), ("{" * 81, "GSM-7", 2),
    ("ê" * 70, "UCS-2", 1), ("ê" * 71, "UCS-2", 2), ("ê" * 134, "UCS-2", 2),
])
def test_sms_segments(text: str, encoding: str, segments: int) -> None:
    assert formatting.sms_segments(text) == (encoding, segments)


def test_french_transliteration_keeps_what_gsm7_has() -> None:
    source = "À l'école, Noël : « Ça va ? » — l’élève connaît où ça coûte ; œuf, naïve, Ève."
    sms = formatting.to_gsm7(source)
    assert sms == "A l'école, Noel : \"Ça va ?\" - l'élève connait où ca coute ; oeuf, naive, Eve."
    assert formatting.is_gsm7(sms)
    assert formatting.sms_segments(sms) == ("GSM-7", 1)
    assert formatting.sms_segments(source)[0] == "UCS-2"


def test_an_emoji_that_opens_a_line_leaves_no_space_on_sms() -> None:
    sms = formatting.to_gsm7("⏳ Je travaille.\n🔗 En direct : https://deblo.example/j/7\nA 🔗 b")
    assert sms == "Je travaille.\nEn direct : https://deblo.example/j/7\nA b"


def test_splitting_prefers_paragraphs_then_sentences() -> None:
    paragraph = "Une phrase courte. " * 50
    parts = formatting.split_text(f"{paragraph}\n\n{paragraph}", 1600)
    assert len(parts) == 2 and all(p.endswith(".") for p in parts)
    long_paragraph = "Une phrase un peu plus longue que les autres. " * 100
    parts = formatting.split_text(long_paragraph, 1600)
    assert all(len(p) <= 1600 and p.endswith(".") for p in parts)
    assert " ".join(parts) == long_paragraph.strip()
    word = "x" * 4000
    assert [len(p) for p in formatting.split_text(word, 1600)] == [1600, 1600, 800]
    assert formatting.split_text("", 1600) == []


def test_whatsapp_code_blocks_are_left_alone() -> None:
    md = "Exemple :\n```python\nx = 2 ** 3  # **pas du gras**\n```"
    assert formatting.to_whatsapp(md) == "Exemple :\n```x = 2 ** 3  # **pas du gras**```"
    assert formatting.to_plain(md) == "Exemple :\nx = 2 ** 3  # **pas du gras**"


# --- command line ------------------------------------------------------------------------------


def _run(args: list[str], tmp_path: Path, env: dict[str, str] | None = None,
         stdin: str = "") -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TWILIO_", "LLM_", "PUBLIC_", "REDIS_",
                                                                     "DATABASE_", "DATA_DIR"))}
    clean.update({"PYTHONPATH": str(ROOT), "DATA_DIR": str(tmp_path / "data")})
    clean.update(env or {})
    return subprocess.run([sys.executable, "-m", "bot", *args], cwd=tmp_path, env=clean, input=stdin,
                          capture_output=True, text=True, timeout=60)


def test_the_workers_import_the_whole_handler_chain_and_every_tool_before_the_first_message() -> None:
    """Imported at the first message instead, the handlers' and tools' modules (matplotlib, the
    document libraries) held a worker's event loop for seconds: its users' lock leases lapsed and
    another worker took a running message over."""
    script = (
        "import sys\n"
        "from bot import cli\n"
        "cli.dispatch_function(); cli.job_runner()\n"
        "before = set(sys.modules)\n"
        "import handlers, tools\n"
        "from bot.config import load_settings\n"
        "handlers.chain()\n"
        "for mode in ('child', 'pro'): tools.for_mode(mode, load_settings({}))\n"
        "ours = {'handlers', 'tools', 'matplotlib'}\n"
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in ours))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_serve_names_the_first_missing_setting(tmp_path: Path) -> None:
    result = _run(["serve"], tmp_path)
    assert result.returncode == 2
    assert "PUBLIC_BASE_URL" in result.stderr and ".env.example" in result.stderr
    result = _run(["serve"], tmp_path, {"PUBLIC_BASE_URL": "https://bot.example.org"})
    assert result.returncode == 2 and "missing required setting TWILIO_ACCOUNT_SID" in result.stderr


def test_serve_says_at_start_up_when_the_sandbox_is_missing(tmp_path: Path) -> None:
    assert _run(["db", "upgrade"], tmp_path).returncode == 0
    prefixes = ("TWILIO_", "LLM_", "REDIS_", "DATABASE_")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    clean.update({
        "PYTHONPATH": str(ROOT), "DATA_DIR": str(tmp_path / "data"), "HOST": "127.0.0.1", "PORT": "0",
        "PUBLIC_BASE_URL": "https://bot.deblo.test", "TWILIO_ACCOUNT_SID": "AC" + "0" * 32,
        "TWILIO_AUTH_TOKEN": "twilio-token", "LLM_API_KEY": "key", "SANDBOX_BWRAP": "/nonexistent/bwrap",
        "SECRET_KEY": "the-bots-own-secret-of-32-or-more-characters",
    })
    seen = start_up_lines(clean, tmp_path)
    assert any("bash_execute is not offered" in line and "bubblewrap" in line for line in seen), seen


def test_db_upgrade_chat_and_set_mode(tmp_path: Path) -> None:
    assert _run(["db", "upgrade"], tmp_path).returncode == 0
    result = _run(["chat", "--phone", "+2250700000001"], tmp_path, stdin="Bonjour\nMENU\n")
    assert result.returncode == 0, result.stderr
    assert "Bienvenue sur Deblo" in result.stdout and "1 Élève" in result.stdout
    assert "NOUVEAU" in result.stdout  # the MENU answer
    result = _run(["users", "set-mode", "+2250700000001", "pro"], tmp_path)
    assert result.returncode == 0 and "mode pro" in result.stdout
    result = _run(["users", "set-mode", "+2250799999999", "pro"], tmp_path)
    assert result.returncode == 0 and "new user, ready to use" in result.stdout, result.stdout


async def test_manual_clock_is_what_the_harness_uses(harness: Harness) -> None:
    assert isinstance(harness.clock, ManualClock) and harness.services.clock is harness.clock


def test_env_example_lists_every_setting() -> None:
    import re

    from bot.config import Environment

    read = {name.upper() for name in Environment.model_fields}
    example = (ROOT / ".env.example").read_text()
    listed = set(re.findall(r"^([A-Z][A-Z0-9_]+)=", example, re.M))
    missing = sorted(name for name in read - listed if not name.endswith("_FOR_TESTS"))
    assert missing == [], f"add these settings to .env.example: {missing}"
    assert read >= {"DATA_DIR", "DATABASE_URL", "REDIS_URL", "PUBLIC_BASE_URL", "TWILIO_API_BASE_URL"}


def _names_defined(tree: ast.Module) -> set[str]:
    """The names a module binds: assignments (tuples too), functions, classes, imports."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            found |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return found


def test_every_package_of_bot_shows_its_face() -> None:
    """Each package under bot/ (the migrations aside) lists what it shows in `__all__`: names it
    defines or imports, or its own modules."""
    problems = []
    for init in sorted((ROOT / "bot").rglob("__init__.py")):
        package = init.parent
        if "migrations" in package.parts or package == ROOT / "bot":
            continue
        tree = ast.parse(init.read_text())
        shown = [ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
        if not shown:
            problems.append(f"{init.relative_to(ROOT)} has no __all__")
            continue
        modules = {p.stem for p in package.glob("*.py")} | {p.name for p in package.iterdir() if p.is_dir()}
        known = _names_defined(tree) | modules
        problems += [f"{init.relative_to(ROOT)}: {name!r} is neither defined there nor a module of it"
                     for name in shown[0] if name not in known]
    assert not problems, "\n".join(problems)
