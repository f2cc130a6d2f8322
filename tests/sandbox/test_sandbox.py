"""bash_execute runs commands in a bubblewrap sandbox: each escape attempt is contained."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import socket
from pathlib import Path

import pytest
from aiohttp import web

from bot.agent.toolspec import ToolContext
from bot.sandbox import bwrap as sandbox
from tests.support.sandbox import assert_bot_unharmed, bash, cgroup_name, make_settings, open_services
from tools import for_mode
from tools.bash_execute import TOOL as BASH

# One backend: the database only holds the turn; a sandbox run does not depend on it.
pytestmark = [pytest.mark.timeout(60), pytest.mark.one_backend]


@pytest.fixture
async def services(tmp_path: Path):
    settings = make_settings(
        tmp_path, SANDBOX_TIMEOUT_S="3", SANDBOX_CPU_S="2", SANDBOX_MEMORY_MB="256", SANDBOX_MAX_PROCS="32"
    )
    services = await open_services(settings, create=False)
    yield services
    await services.close()


def host_has(path: str) -> bool:
    return os.path.exists(path)


def lingering(marker: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and b"pytest" not in cmdline:
            found.append(int(pid))
    return found


async def test_python3_works_and_output_is_returned(services) -> None:
    result = await bash(services, "python3 -c 'print(sum(range(101)))'; echo oops >&2; exit 3")
    assert result["stdout"] == "5050\n"
    assert result["stderr"] == "oops\n"
    assert result["exit_code"] == 3
    assert result["success"] is False


async def test_etc_shadow_is_not_readable(services) -> None:
    assert host_has("/etc/shadow")  # the host has one; the sandbox must not show it
    result = await bash(services, "cat /etc/shadow")
    assert result["exit_code"] != 0
    assert "No such file" in result["stderr"]
    listing = await bash(services, "ls /etc /root /home 2>&1")
    assert "shadow" not in listing["stdout"] and "passwd" not in listing["stdout"]


async def test_bot_environment_is_invisible(services, monkeypatch) -> None:
    monkeypatch.setenv("DEBLO_TEST_SECRET", "s3cret-value-4242")
    result = await bash(services, "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'")
    assert result["success"]
    assert "s3cret-value-4242" not in result["stdout"]
    assert "TWILIO" not in result["stdout"] and "DATABASE_URL" not in result["stdout"]
    assert "HOME=/work" in result["stdout"]


async def test_data_dir_and_database_are_invisible(services) -> None:
    data_dir = services.settings.data_dir.resolve()
    (data_dir / "deblo.db").write_text("secret database")
    (data_dir / "files").mkdir(exist_ok=True)
    result = await bash(services, f"ls {data_dir}; cat {data_dir}/deblo.db; ls {Path.cwd()}")
    assert "secret database" not in result["stdout"]
    assert result["stdout"] == ""
    assert result["stderr"].count("No such file") == 3


async def test_network_is_unreachable(services) -> None:
    hits: list[str] = []

    async def hit(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(text="reached")

    app = web.Application()
    app.router.add_get("/", hit)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    host_ip = socket.gethostbyname(socket.gethostname())
    try:
        script = (
            "import socket,sys\n"
            f"for host in ('127.0.0.1', '{host_ip}', '1.1.1.1'):\n"
            "    try:\n"
            f"        socket.create_connection((host, {port}), timeout=2); print('CONNECTED', host)\n"
            "    except OSError as e:\n"
            "        print('refused', host, e.errno)\n"
        )
        result = await bash(services, f'python3 -c "{script}"')
        assert "CONNECTED" not in result["stdout"]
        assert result["stdout"].count("refused") == 3
        assert hits == []
    finally:
        await runner.cleanup()


async def test_fork_bomb_is_contained(services) -> None:
    result = await bash(services, "python3 -c 'import os\nwhile True: os.fork()'")
    assert result["success"] is False
    assert "Resource temporarily unavailable" in result["stderr"]
    shell_bomb = await bash(services, "bash -c ':(){ :|:& };:'; sleep 1; echo survived")
    assert "survived" in shell_bomb["stdout"]
    await asyncio.sleep(0.5)
    await assert_bot_unharmed(services)


async def test_ten_gigabyte_file_is_capped(services) -> None:
    result = await bash(
        services, "dd if=/dev/zero of=big bs=1M count=10240 2>/dev/null; echo dd=$?; stat -c %s big"
    )
    lines = result["stdout"].split()
    assert lines[0] != "dd=0"
    assert int(lines[1]) <= services.settings.sandbox_file_mb * 1024 * 1024
    await assert_bot_unharmed(services)


async def test_memory_is_capped(services) -> None:
    result = await bash(services, "python3 -c 'x = bytearray(1024 ** 3); print(len(x))'")
    assert "MemoryError" in result["stderr"]
    assert result["stdout"] == ""


async def test_endless_loop_is_stopped_by_cpu_limit(tmp_path: Path) -> None:
    # A wall-clock timeout far away: the CPU-time limit is what stops the loop.
    settings = make_settings(tmp_path, SANDBOX_TIMEOUT_S="50", SANDBOX_CPU_S="1")
    services = await open_services(settings, create=False)
    try:
        result = await bash(services, "while :; do :; done")
        assert result["success"] is False
        assert result["exit_code"] is not None and result["exit_code"] < 0  # killed by a signal
        assert "limit" in result["error"]
        await assert_bot_unharmed(services)
    finally:
        await services.close()


async def test_sleeping_command_is_killed_at_timeout_with_its_children(services) -> None:
    result = await bash(services, "sleep 987654 & sleep 987655; echo never")
    assert result["success"] is False
    assert result["exit_code"] is None
    assert "too long" in result["error"]
    assert "never" not in result["stdout"]
    for _ in range(50):
        if not lingering("98765"):
            break
        await asyncio.sleep(0.1)
    assert lingering("98765") == []
    await assert_bot_unharmed(services)


async def test_output_is_capped_at_4000_characters(services) -> None:
    result = await bash(services, "yes 0123456789 | head -c 50000000; yes e | head -c 100000 >&2")
    assert len(result["stdout"]) == sandbox.OUTPUT_CHARS
    assert result["stdout"].startswith("0123456789\n")
    assert len(result["stderr"]) == sandbox.OUTPUT_CHARS
    assert result["truncated"] is True


async def test_workspace_is_writable_and_thrown_away(services) -> None:
    first = await bash(services, "echo kept > note.txt && cat note.txt && pwd")
    assert first["stdout"] == "kept\n/work\n"
    second = await bash(services, "cat note.txt")
    assert second["exit_code"] != 0
    assert "No such file" in second["stderr"]
    system = await bash(services, "touch /usr/evil")
    assert system["exit_code"] != 0
    assert not host_has("/usr/evil")


async def test_bad_input_is_refused(services) -> None:
    assert (await bash(services, ""))["success"] is False
    assert "too long" in (await bash(services, "x" * 20_000))["error"]
    ctx = ToolContext(
        services=services, user_id=1, conversation_id=1, channel="sms", mode="pro", language="fr"
    )
    assert "required" in (await BASH.run(ctx, {}))["error"]


async def test_offered_in_pro_only_and_not_when_bubblewrap_is_missing(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    assert "bash_execute" in [t.name for t in for_mode("pro", settings)]
    assert "bash_execute" not in [t.name for t in for_mode("child", settings)]
    assert "bash_execute" not in [t.name for t in for_mode("guest", settings)]
    missing = make_settings(tmp_path, SANDBOX_BWRAP="/nonexistent/bwrap")
    assert "bubblewrap" in (BASH.unavailable(missing) or "")
    assert "bash_execute" not in [t.name for t in for_mode("pro", missing)]
    assert sandbox.log_availability(missing) is not None


async def test_missing_bubblewrap_gives_an_error_result(tmp_path: Path) -> None:
    services = await open_services(make_settings(tmp_path, SANDBOX_BWRAP="/nonexistent/bwrap"), create=False)
    try:
        result = await bash(services, "echo hi")
        assert result["success"] is False and "unavailable" in result["error"]
    finally:
        await services.close()


async def test_cancelled_call_leaves_nothing_running(services) -> None:
    """The agent's tool timeout cancels the call: the sandbox goes with it."""
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(bash(services, "sleep 876543"), timeout=0.5)
    for _ in range(50):
        if not lingering("876543"):
            break
        await asyncio.sleep(0.1)
    assert lingering("876543") == []
    await assert_bot_unharmed(services)


async def test_model_runs_code_for_a_pro_user_through_the_webhook(make_harness) -> None:
    h = await make_harness(SANDBOX_TIMEOUT_S="4", SANDBOX_CGROUP=cgroup_name())
    await h.make_user("+2250700000020", mode="pro")
    h.llm.push_tool_calls(("bash_execute", {"command": "python3 -c 'print(6*7)'; cat /etc/shadow"}))
    h.llm.push_text("Le résultat est 42.")
    status, _ = await h.inbound("+2250700000020", "Calcule 6*7 en Python")
    assert status == 200
    await h.settle()
    tool_messages = [m for m in h.llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert '"stdout": "42\\n"' in tool_messages[-1]["content"]
    assert "No such file" in tool_messages[-1]["content"]
    assert "bash_execute" in json.dumps(h.llm.requests[0].get("tools", []))
    assert (await h.texts_to("+2250700000020"))[-1] == "Le résultat est 42."


async def test_child_is_not_offered_bash(make_harness) -> None:
    h = await make_harness()
    await h.make_user("+2250700000021", mode="child")
    h.llm.push_text("Bonjour !")
    await h.inbound("+2250700000021", "Salut")
    await h.settle()
    offered = [t["function"]["name"] for t in h.llm.requests[0].get("tools", [])]
    assert "create_task" in offered and "bash_execute" not in offered


async def test_gigabytes_of_output_do_not_fill_our_memory(services) -> None:
    grown_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = await bash(services, "head -c 1000000000 /dev/zero | tr '\\0' 'a'")
    assert result["stdout"] == "a" * sandbox.OUTPUT_CHARS
    assert result["truncated"] is True
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - grown_before
    assert grown_kib < 100 * 1024  # a gigabyte went through; far less than that was kept


async def test_a_sandbox_that_cannot_start_is_reported(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    settings = make_settings(tmp_path, SANDBOX_BWRAP=str(fake), SANDBOX_UID=str(os.geteuid()))
    assert "cannot start a sandbox" in (sandbox.unavailable_reason(settings) or "")
    assert "bash_execute" not in [t.name for t in for_mode("pro", settings)]
    services = await open_services(settings)
    try:
        result = await bash(services, "echo hi")
        assert result["success"] is False and "unavailable" in result["error"]
    finally:
        await services.close()


async def test_background_processes_die_with_the_command(services) -> None:
    result = await bash(services, "(sleep 654321 &) ; nohup sleep 654322 >/dev/null 2>&1 & echo started")
    assert result["stdout"] == "started\n"
    for _ in range(50):
        if not lingering("65432"):
            break
        await asyncio.sleep(0.1)
    assert lingering("65432") == []
