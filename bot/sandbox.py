"""Runs one shell command in a bubblewrap sandbox, for `bash_execute`.

What the command sees: the system's read-only /usr (so `python3` and the usual tools work), an empty
writable /work and /tmp on size-capped tmpfs that vanish with it, no network (its own network
namespace), its own process namespace, and an empty environment but for PATH/HOME/LANG. The bot's
files, database, DATA_DIR, /etc (so /etc/shadow), /home and /root are simply not mounted.

Limits are rlimits set inside the sandbox by `prlimit` (CPU seconds, address space, processes, file
size, open files), plus a wall-clock timeout that kills the whole process group. When the bot runs as
root the sandbox is started as an unprivileged uid: the kernel does not enforce the process limit on
root, and root inside a user namespace is still root's quota outside.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from bot.config import Settings

log = logging.getLogger(__name__)

OUTPUT_CHARS = 4000
_READ_CHUNK = 65536
_PATH = "/usr/local/bin:/usr/bin:/bin"
# System directories mounted read-only when they exist (symlinks are recreated as symlinks).
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The few files of /etc that programs need to start; nothing with accounts or secrets.
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/alternatives", "/etc/localtime")


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 30.0
    cpu_s: int = 20
    memory_mb: int = 512
    max_procs: int = 64
    file_mb: int = 16
    workspace_mb: int = 64
    output_chars: int = OUTPUT_CHARS


@dataclass
class Result:
    exit_code: int | None  # None when killed by the timeout
    stdout: str
    stderr: str
    timed_out: bool
    stdout_truncated: bool
    stderr_truncated: bool
    duration_s: float

    def as_tool_result(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "success": self.exit_code == 0 and not self.timed_out,
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
        }
        if self.timed_out:
            out["error"] = "the command ran too long and was stopped"
        elif self.exit_code is not None and self.exit_code < 0:
            out["error"] = f"the command was killed by signal {-self.exit_code} (a resource limit)"
        if self.stdout_truncated or self.stderr_truncated:
            out["truncated"] = True
        return out


class SandboxUnavailable(RuntimeError):
    """bubblewrap (or prlimit) is missing or cannot create a sandbox here."""


def limits_from(settings: Settings) -> Limits:
    return Limits(
        timeout_s=settings.sandbox_timeout_s,
        cpu_s=settings.sandbox_cpu_s,
        memory_mb=settings.sandbox_memory_mb,
        max_procs=settings.sandbox_max_procs,
        file_mb=settings.sandbox_file_mb,
        workspace_mb=settings.sandbox_workspace_mb,
    )


def unavailable_reason(settings: Settings) -> str | None:
    """Why commands cannot be sandboxed here (None when they can)."""
    bwrap = shutil.which(settings.sandbox_bwrap)
    if bwrap is None:
        return f"bubblewrap ({settings.sandbox_bwrap}) is not installed: install the 'bubblewrap' package"
    if shutil.which("prlimit") is None:
        return "prlimit (util-linux) is not installed"
    return _probe(bwrap, settings.sandbox_uid)


def _drop_privileges(run_as_uid: int) -> dict[str, Any]:
    if os.geteuid() == 0:
        return {"user": run_as_uid, "group": run_as_uid, "extra_groups": []}
    return {}


@lru_cache(maxsize=8)
def _probe(bwrap: str, run_as_uid: int) -> str | None:
    """Starts one empty sandbox, once per process: bwrap may exist yet be refused user namespaces."""
    import subprocess

    args = bwrap_args(bwrap, Limits(), "true")
    try:
        done = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            env={"PATH": _PATH},
            cwd="/",
            **_drop_privileges(run_as_uid),
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap cannot start a sandbox here: {exc}"
    if done.returncode != 0:
        return f"bubblewrap cannot start a sandbox here: {done.stderr.strip()[:200] or done.returncode}"
    return None


@lru_cache(maxsize=8)
def _supports_tmpfs_size(bwrap: str) -> bool:
    import subprocess

    try:
        out = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--size" in (out.stdout + out.stderr)


def bwrap_args(bwrap: str, limits: Limits, command: str) -> list[str]:
    args = [
        bwrap,
        "--unshare-all",  # network, pid, ipc, uts, cgroup and user namespaces
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
        "--clearenv",
        "--setenv",
        "PATH",
        _PATH,
        "--setenv",
        "HOME",
        "/work",
        "--setenv",
        "TMPDIR",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "PYTHONDONTWRITEBYTECODE",
        "1",
    ]
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in _ETC_FILES:
        args += ["--ro-bind-try", path, path]
    args += ["--proc", "/proc", "--dev", "/dev"]
    sized = _supports_tmpfs_size(bwrap)
    for path in ("/work", "/tmp"):
        if sized:
            args += ["--size", str(limits.workspace_mb * 1024 * 1024)]
        args += ["--tmpfs", path]
    args += ["--chdir", "/work", "--"]
    args += [
        "prlimit",
        f"--cpu={limits.cpu_s}",
        f"--as={limits.memory_mb * 1024 * 1024}",
        f"--nproc={limits.max_procs}",
        f"--fsize={limits.file_mb * 1024 * 1024}",
        "--nofile=256",
        "--core=0",
        "--",
        "/bin/sh",
        "-c",
        command,
    ]
    return args


async def _read_capped(stream: asyncio.StreamReader, cap_chars: int) -> tuple[str, bool]:
    """Reads to EOF keeping only the head: a command printing gigabytes costs us no memory."""
    cap_bytes = cap_chars * 4  # a UTF-8 character is at most 4 bytes
    kept = bytearray()
    dropped = False
    while True:
        chunk = await stream.read(_READ_CHUNK)
        if not chunk:
            break
        room = cap_bytes - len(kept)
        if room > 0:
            kept += chunk[:room]
        if len(chunk) > max(room, 0):
            dropped = True
    text = kept.decode("utf-8", errors="replace")
    if len(text) > cap_chars:
        return text[:cap_chars], True
    return text, dropped


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run(command: str, limits: Limits, *, bwrap: str = "bwrap", run_as_uid: int = 65534) -> Result:
    """Runs `command` with /bin/sh -c in a fresh sandbox and returns its capped output."""
    resolved = shutil.which(bwrap)
    if resolved is None:
        raise SandboxUnavailable(f"bubblewrap ({bwrap}) is not installed")
    drop = _drop_privileges(run_as_uid)
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *bwrap_args(resolved, limits, command),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PATH": _PATH},
        cwd="/",
        start_new_session=True,
        **drop,
    )
    assert proc.stdout is not None and proc.stderr is not None
    readers = asyncio.gather(
        _read_capped(proc.stdout, limits.output_chars), _read_capped(proc.stderr, limits.output_chars)
    )
    timed_out = False
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), timeout=limits.timeout_s)
    except TimeoutError:
        timed_out = True
        # Killing bwrap's group ends the sandbox's pid namespace, and everything the command started.
        _kill_group(proc.pid)
    except asyncio.CancelledError:
        # The tool timeout (or shutdown) cancelled us: nothing may outlive the call.
        _kill_group(proc.pid)
        readers.cancel()
        raise
    await proc.wait()
    try:
        (out, out_cut), (err, err_cut) = await asyncio.wait_for(readers, timeout=5)
    except TimeoutError:
        readers.cancel()
        out, out_cut, err, err_cut = "", True, "", True
    code = proc.returncode
    if timed_out:
        code = None
    elif code is not None and code >= 128 and code - 128 in (signal.SIGKILL, signal.SIGXCPU, signal.SIGXFSZ):
        code = -(code - 128)  # the shell reports a signal death as 128+n
    if code == 1 and err.startswith("bwrap:") and not out:
        log.error("sandbox could not start: %s", err.strip()[:300])
        raise SandboxUnavailable(err.strip()[:300])
    return Result(
        exit_code=code,
        stdout=out,
        stderr=err,
        timed_out=timed_out,
        stdout_truncated=out_cut,
        stderr_truncated=err_cut,
        duration_s=round(time.monotonic() - started, 3),
    )


async def execute(services: Any, command: str) -> Result:
    """Runs one command with the settings' limits, at most SANDBOX_CONCURRENCY at a time per process."""
    settings: Settings = services.settings
    slots = services.extra.get("sandbox_slots")
    if slots is None:
        slots = services.extra.setdefault(
            "sandbox_slots", asyncio.Semaphore(max(1, settings.sandbox_concurrency))
        )
    async with slots:
        return await run(
            command, limits_from(settings), bwrap=settings.sandbox_bwrap, run_as_uid=settings.sandbox_uid
        )


def log_availability(settings: Settings) -> str | None:
    """Called at start-up: says once whether bash_execute can be offered."""
    reason = unavailable_reason(settings)
    if reason:
        log.warning("bash_execute is not offered: %s", reason)
    else:
        log.info("bash_execute sandbox: %s", shutil.which(settings.sandbox_bwrap))
    return reason
