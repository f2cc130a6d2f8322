"""Limits per sandbox (a control group each) and for all sandboxes together; a minimal /dev."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.sandbox import bwrap as sandbox
from bot.sandbox import cgroup
from tests.support.processes import start_up_lines
from tests.support.sandbox import (
    assert_bot_unharmed,
    bash,
    cgroup_name,
    make_settings,
    open_services,
    parent_dirs,
)
from tools import for_mode

# One backend: the database only holds the turn; a sandbox run does not depend on it.
pytestmark = [pytest.mark.timeout(90), pytest.mark.one_backend]

# Forks and allocates in every process: 32 processes may each hold 200 MB, far past the group's cap.
FORK_AND_ALLOCATE = """python3 -c '
import os
blocks = []
while True:
    try:
        os.fork()
    except OSError:
        pass
    try:
        blocks.append(b"x" * (16 << 20))
    except MemoryError:
        pass
'"""
SHM_FILL = (
    "df -m /dev/shm | tail -1; "
    "for i in 1 2 3 4; do dd if=/dev/zero of=/dev/shm/f$i bs=1M count=4 || exit 1; done"
)


@pytest.fixture
async def services(tmp_path: Path):
    settings = make_settings(
        tmp_path, SANDBOX_TIMEOUT_S="4", SANDBOX_CPU_S="3", SANDBOX_MEMORY_MB="192", SANDBOX_MAX_PROCS="32",
        SANDBOX_TOTAL_MEMORY_MB="512", SANDBOX_SHM_MB="8",
    )
    services = await open_services(settings)
    yield services
    await services.close()


def sandbox_groups(services) -> list[Path]:
    """The groups of sandboxes running now (under this test's parent), one directory each."""
    found: dict[str, Path] = {}
    for parent in parent_dirs(services.settings.sandbox_cgroup):
        for d in parent.iterdir():
            if d.is_dir() and d.name.startswith(cgroup.GROUP_PREFIX):
                found.setdefault(d.name, d)
    return list(found.values())


async def test_a_control_group_limits_each_sandbox_here(services) -> None:
    limiter = sandbox.limiter_for(services.settings)
    assert limiter is not None and limiter.kind in ("cgroup2", "cgroup1")
    parents = dict(limiter.parents)
    if limiter.kind == "cgroup1":
        assert (parents["memory"] / "memory.limit_in_bytes").read_text().strip() == str(512 << 20)
    else:
        assert (parents[""] / "memory.max").read_text().strip() == str(512 << 20)
    running = asyncio.create_task(bash(services, "sleep 1; echo done"))
    inside: list[str] = []
    for _ in range(200):
        for group in sandbox_groups(services):
            inside += (group / "cgroup.procs").read_text().split()
        if inside:
            break
        await asyncio.sleep(0.02)
    assert inside  # the sandbox's processes are in its group
    assert (await running)["stdout"] == "done\n"
    assert sandbox_groups(services) == []  # removed after the run


async def test_fork_and_allocate_bomb_is_stopped_with_a_clear_error(services) -> None:
    result = await bash(services, FORK_AND_ALLOCATE)
    assert result["success"] is False
    assert result["error"] == (
        "the command needed more than 192 MB of memory (all its processes together) and was stopped"
    )
    assert sandbox_groups(services) == []
    await assert_bot_unharmed(services)


async def test_other_sandboxes_run_while_a_bomb_is_contained(services) -> None:
    bomb = asyncio.create_task(bash(services, FORK_AND_ALLOCATE))
    for _ in range(200):
        if sandbox_groups(services):
            break
        await asyncio.sleep(0.02)
    calm = await bash(services, "python3 -c 'print(6 * 7)'")
    assert calm["success"] and calm["stdout"] == "42\n"
    assert "memory" in (await bomb)["error"]


async def test_too_many_processes_are_refused_with_a_clear_error(services) -> None:
    result = await bash(services, "for i in $(seq 60); do sleep 5 & done; wait")
    assert result["success"] is False
    assert "more than 32 processes" in result["error"]
    assert "fork" in result["stderr"] or "Resource temporarily unavailable" in result["stderr"]
    await assert_bot_unharmed(services)


async def test_dev_shm_fill_stops_at_its_cap_with_a_clear_error(services) -> None:
    result = await bash(services, SHM_FILL)
    assert result["success"] is False
    assert "No space left on device" in result["stderr"]
    assert "/dev/shm 8 MB" in result["error"]
    assert result["stdout"].split()[1] == "8"  # df: the size of /dev/shm in MB
    python_fill = await bash(
        services,
        "python3 -c 'from multiprocessing import shared_memory as s\n"
        "m = s.SharedMemory(create=True, size=12 << 20)\nm.buf[:] = bytes(12 << 20)'",
    )
    assert python_fill["success"] is False
    assert "/dev/shm 8 MB" in python_fill["error"]
    await assert_bot_unharmed(services)


async def test_dev_is_minimal_and_the_root_read_only(services) -> None:
    result = await bash(services, "ls /dev; head -c 8 /dev/urandom | wc -c; echo x > /dev/null && echo ok")
    assert result["stdout"].split() == [
        "fd", "null", "random", "shm", "stderr", "stdin", "stdout", "urandom", "zero", "8", "ok"]
    writes = await bash(
        services, "touch /dev/sda; touch /evil; mkdir /dev/x; touch /tmp/a /work/b /dev/shm/c"
    )
    assert writes["stderr"].count("Read-only file system") == 3
    assert writes["exit_code"] == 0  # the last touch, on the writable mounts, worked


async def test_total_memory_bounds_how_many_run_at_once(services) -> None:
    assert sandbox.slot_count(services.settings) == 2  # 512 MB for all, 192 MB each
    most = 0

    async def watch() -> None:
        nonlocal most
        while True:
            most = max(most, len(sandbox_groups(services)))
            await asyncio.sleep(0.01)

    watcher = asyncio.create_task(watch())
    try:
        results = await asyncio.gather(*(bash(services, f"sleep 0.5; echo {i}") for i in range(5)))
    finally:
        watcher.cancel()
    assert [r["stdout"] for r in results] == [f"{i}\n" for i in range(5)]
    assert most == 2


async def test_settings_that_fit_no_sandbox_are_refused(tmp_path: Path) -> None:
    small = make_settings(tmp_path, SANDBOX_TOTAL_MEMORY_MB="256", SANDBOX_MEMORY_MB="512")
    reason = sandbox.unavailable_reason(small) or ""
    assert "SANDBOX_TOTAL_MEMORY_MB (256) is below SANDBOX_MEMORY_MB (512)" in reason
    assert "bash_execute" not in [t.name for t in for_mode("pro", small)]
    wrong = make_settings(tmp_path, SANDBOX_LIMITER="docker")
    assert "SANDBOX_LIMITER must be one of auto, cgroup2, cgroup1, rlimits" in (
        sandbox.unavailable_reason(wrong) or "")
    services = await open_services(small)
    try:
        result = await bash(services, "echo hi")
        assert result["success"] is False and "SANDBOX_TOTAL_MEMORY_MB" in result["error"]
    finally:
        await services.close()


async def test_start_up_says_which_limiter_is_used(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = make_settings(tmp_path)
    with caplog.at_level(logging.INFO, logger="bot.sandbox.bwrap"):
        assert sandbox.log_availability(settings) is None
    assert any("limits by cgroup v" in r.getMessage() and "MB for all" in r.getMessage()
               for r in caplog.records), caplog.text
    caplog.clear()
    fallback = make_settings(tmp_path, SANDBOX_LIMITER="rlimits")
    with caplog.at_level(logging.INFO, logger="bot.sandbox.bwrap"):
        assert sandbox.log_availability(fallback) is None
    assert any("per process only" in r.getMessage() for r in caplog.records), caplog.text


async def test_no_usable_cgroup_means_no_bash_unless_rlimits_are_accepted(tmp_path: Path) -> None:
    bad = make_settings(tmp_path, SANDBOX_CGROUP="../escape")
    reason = sandbox.unavailable_reason(bad) or ""
    assert "no control group can limit the sandbox" in reason and "SANDBOX_LIMITER=rlimits" in reason
    assert "bash_execute" not in [t.name for t in for_mode("pro", bad)]
    accepted = make_settings(tmp_path, SANDBOX_CGROUP="../escape", SANDBOX_LIMITER="rlimits")
    assert sandbox.unavailable_reason(accepted) is None
    services = await open_services(accepted)
    try:
        result = await bash(services, "echo per-process")
        assert result["success"] and result["stdout"] == "per-process\n"
    finally:
        await services.close()
    if sandbox.limiter_for(make_settings(tmp_path)).kind == "cgroup1":  # type: ignore[union-attr]
        # This host's v2 hierarchy has no controllers: asking for v2 only is refused.
        v2_only = make_settings(tmp_path, SANDBOX_LIMITER="cgroup2")
        assert "cgroup2:" in (sandbox.unavailable_reason(v2_only) or "")


async def test_the_bot_keeps_answering_while_a_bomb_runs(make_harness) -> None:
    h = await make_harness(SANDBOX_TIMEOUT_S="4", SANDBOX_MEMORY_MB="192", SANDBOX_MAX_PROCS="32",
                           SANDBOX_CGROUP=cgroup_name())
    await h.make_user("+2250700000030", mode="pro")
    await h.make_user("+2250700000031", mode="child")
    h.llm.push_tool_calls(("bash_execute", {"command": FORK_AND_ALLOCATE}))
    h.llm.push_text("Bonjour, je suis là.")
    h.llm.push_text("Ce programme demande trop de mémoire.")
    assert (await h.inbound("+2250700000030", "Lance ce programme"))[0] == 200
    for _ in range(300):
        if h.llm.requests and sandbox_groups(h.services):
            break
        await asyncio.sleep(0.02)
    assert (await h.inbound("+2250700000031", "Salut"))[0] == 200
    for _ in range(500):
        if await h.texts_to("+2250700000031"):
            break
        await asyncio.sleep(0.02)
    assert await h.texts_to("+2250700000031") == ["Bonjour, je suis là."]
    await h.settle()
    tool_messages = [m for m in h.llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert "more than 192 MB of memory" in tool_messages[-1]["content"]
    assert (await h.texts_to("+2250700000030"))[-1] == "Ce programme demande trop de mémoire."


def fake_v2_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own: str) -> Path:
    """A cgroup2 layout in plain files, as a modern host shows it (the kernel's checks aside)."""
    root = tmp_path / "cgroup"
    for path in (root, root / own.strip("/")):
        path.mkdir(parents=True, exist_ok=True)
        (path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
        (path / "cgroup.subtree_control").write_text("\n")
        (path / "cgroup.procs").write_text("")
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(f"30 23 0:26 / {root} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n")
    own_file = tmp_path / "own"
    own_file.write_text(f"0::{own}\n")
    monkeypatch.setattr(cgroup, "_MOUNTINFO", mountinfo)
    monkeypatch.setattr(cgroup, "_OWN", own_file)
    return root



async def test_cgroup_v2_files_are_written_as_the_kernel_expects(tmp_path, monkeypatch) -> None:
    root = fake_v2_tree(tmp_path, monkeypatch, "/system.slice/deblo.service")
    own = root / "system.slice" / "deblo.service"
    real_mkdir = Path.mkdir

    def mkdir(self: Path, *args: object, **kwargs: object) -> None:
        real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]
        (self / "cgroup.controllers").write_text("cpu memory pids\n")  # the kernel adds these files
        (self / "cgroup.subtree_control").write_text("\n")

    monkeypatch.setattr(Path, "mkdir", mkdir)
    limiter = cgroup.setup("auto", "deblo-sandbox", 1024 << 20)
    parent = own / "deblo-sandbox"
    assert limiter.kind == "cgroup2" and limiter.parents == (("", parent),)
    assert (own / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    assert (parent / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    assert (parent / "memory.max").read_text() == str(1024 << 20)
    group = cgroup.create(limiter, "sbx-1", cgroup.GroupLimits(256 << 20, 36, 50_000))
    box = parent / "sbx-1"
    assert (box / "memory.max").read_text() == str(256 << 20)
    assert (box / "memory.oom.group").read_text() == "1"
    assert (box / "pids.max").read_text() == "36"
    assert (box / "cpu.max").read_text() == "50000 100000"
    cgroup.attach(group, 4242)
    assert (box / "cgroup.procs").read_text() == "4242"
    (box / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 1\n")
    (box / "pids.events").write_text("max 0\n")
    assert cgroup.counters(group) == (2, 0)


def test_serve_says_at_start_up_which_limiter_is_used(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    prefixes = ("TWILIO_", "LLM_", "REDIS_", "DATABASE_", "SANDBOX_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env.update({
        "PYTHONPATH": str(root), "DATA_DIR": str(tmp_path / "data"), "HOST": "127.0.0.1", "PORT": "0",
        "PUBLIC_BASE_URL": "https://bot.deblo.test", "TWILIO_ACCOUNT_SID": "AC" + "0" * 32,
        "TWILIO_AUTH_TOKEN": "twilio-token", "LLM_API_KEY": "key",
        "SECRET_KEY": "the-bots-own-secret-of-32-or-more-characters",
        "SANDBOX_CGROUP": cgroup_name(), "SANDBOX_TOTAL_MEMORY_MB": "1024",
    })
    upgrade = subprocess.run([sys.executable, "-m", "bot", "db", "upgrade"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=60)
    assert upgrade.returncode == 0, upgrade.stderr
    seen = start_up_lines(env, tmp_path)
    said = [line for line in seen if "bash_execute sandbox" in line]
    assert said and "limits by cgroup v" in said[0] and "1024 MB for all" in said[0], seen
    assert "2 at once" in said[0]  # 1024 MB for all, 512 MB each


async def test_groups_left_by_a_dead_bot_are_removed_at_start_up() -> None:
    name = cgroup_name()
    limiter = cgroup.setup("auto", name, 1 << 30)
    finished = await asyncio.create_subprocess_exec("true")
    await finished.wait()
    caps = cgroup.GroupLimits(64 << 20, 8, 100_000)
    stale = cgroup.create(limiter, f"{cgroup.GROUP_PREFIX}{finished.pid}-old", caps)
    live = cgroup.create(limiter, f"{cgroup.GROUP_PREFIX}{os.getpid()}-live", caps)
    stale_dirs, live_dirs = list(stale.dirs.values()), list(live.dirs.values())
    cgroup.setup("auto", name, 1 << 30)  # what the next start-up does
    assert stale_dirs and not any(d.exists() for d in stale_dirs)
    assert live_dirs and all(d.exists() for d in live_dirs)  # another process's group is left alone
    await cgroup.remove(live)
    assert not any(d.exists() for d in live_dirs)


async def test_a_parent_group_removed_meanwhile_is_made_again(services) -> None:
    limiter = sandbox.limiter_for(services.settings)
    assert limiter is not None
    assert (await bash(services, "echo one"))["stdout"] == "one\n"
    for _, path in limiter.parents:
        path.rmdir()  # another bot process exited and removed the empty parent
    assert (await bash(services, "echo two"))["stdout"] == "two\n"
    assert all(path.is_dir() for _, path in limiter.parents)
    if limiter.kind == "cgroup1":
        memory = dict(limiter.parents)["memory"]
        assert (memory / "memory.limit_in_bytes").read_text().strip() == str(512 << 20)


def test_parent_groups_are_removed_when_the_process_exits(tmp_path: Path) -> None:
    name = cgroup_name()
    script = ("from bot.sandbox import cgroup\n"
              f"limiter = cgroup.setup('auto', {name!r}, 1 << 30)\n"
              "print('\\n'.join(str(p) for _, p in limiter.parents))\n")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr
    made = [Path(line) for line in done.stdout.split()]
    assert made and not any(path.exists() for path in made)
