"""Runs one shell command in a bubblewrap sandbox, for `bash_execute`.

What the command sees: the system's read-only /usr (so `python3` and the usual tools work), an empty
writable /work and /tmp on size-capped tmpfs that vanish with it, a minimal /dev (null, zero, random,
urandom and a size-capped /dev/shm; nothing else, read-only), a read-only root, no network (its own
network namespace), its own process namespace, and an empty environment but for PATH/HOME/LANG. The
bot's files, database, DATA_DIR, /etc (so /etc/shadow), /home and /root are simply not mounted.

Limits per sandbox come from its own control group (bot/sandbox/cgroup.py): memory of all its processes
together (tmpfs included), number of processes, CPU quota; a parent group caps all sandboxes together
and no more run at once than SANDBOX_TOTAL_MEMORY_MB / SANDBOX_MEMORY_MB. Per-process rlimits set by
`prlimit` (CPU seconds, address space, file size, open files) and a wall-clock timeout that kills the
whole sandbox come on top. Without a usable control group, bash_execute is not offered unless
SANDBOX_LIMITER=rlimits accepts per-process limits only. When the bot runs as root the sandbox is
started as an unprivileged uid: root inside a user namespace is still root's quota outside.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import time
import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from bot.config import Settings
from bot.sandbox import cgroup
from bot.sandbox.errors import SandboxError

log = logging.getLogger(__name__)

OUTPUT_CHARS = 4000
LIMITERS = ("auto", "cgroup2", "cgroup1", "rlimits")
_READ_CHUNK = 65536
_PATH = "/usr/local/bin:/usr/bin:/bin"
# System directories mounted read-only when they exist (symlinks are recreated as symlinks).
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The few files of /etc that programs need to start; nothing with accounts or secrets.
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/alternatives", "/etc/localtime")
_DEVICES = ("null", "zero", "random", "urandom")
# bwrap's own processes (outer, namespace init) and the gate's shell count against the process cap.
_HELPER_PROCS = 4
_BACKSTOP_SANDBOXES = 16  # sandboxes at their process cap at once, host-wide, before the backstop binds
# Waits for one line on stdin (sent once the process is in its control group), then becomes bwrap.
_GATE = 'read -r go || exit 125; exec "$@" </dev/null'
_GATE_FAILED = 125
_LIMIT_SIGNALS = (signal.SIGKILL, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGBUS)
_cleanups: set[asyncio.Task[None]] = set()


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 30.0
    cpu_s: int = 20
    memory_mb: int = 512
    max_procs: int = 64
    file_mb: int = 16
    workspace_mb: int = 64
    shm_mb: int = 16
    cpus: float = 1.0
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
    memory_killed: bool = False  # the control group's memory cap killed a process
    procs_refused: bool = False  # a fork was refused by the process cap
    limits: Limits | None = None

    def limit_error(self) -> str | None:
        limits = self.limits or Limits()
        if self.memory_killed:
            return (f"the command needed more than {limits.memory_mb} MB of memory (all its processes "
                    "together) and was stopped")
        if self.timed_out:
            return "the command ran too long and was stopped"
        if self.procs_refused:
            return (f"the command tried to run more than {limits.max_procs} processes; "
                    "the extra ones were refused")
        # SIGBUS: a write through a memory mapping of a full tmpfs (e.g. shared memory in /dev/shm).
        full = any(m in self.stderr for m in ("No space left on device", "File too large",
                                              "File size limit exceeded"))
        if self.exit_code == -signal.SIGBUS or (self.exit_code != 0 and full):
            return (f"a size limit was reached: /work and /tmp hold {limits.workspace_mb} MB each, "
                    f"/dev/shm {limits.shm_mb} MB, and a file may be at most {limits.file_mb} MB")
        if self.exit_code is not None and self.exit_code < 0:
            return f"the command was killed by signal {-self.exit_code} (a resource limit)"
        return None

    def as_tool_result(self) -> dict[str, Any]:
        error = self.limit_error()
        out: dict[str, Any] = {"success": self.exit_code == 0 and error is None, "exit_code": self.exit_code,
                               "stdout": self.stdout, "stderr": self.stderr}
        if error:
            out["error"] = error
        if self.stdout_truncated or self.stderr_truncated:
            out["truncated"] = True
        return out


class SandboxUnavailable(SandboxError, RuntimeError):
    """bubblewrap (or prlimit, or a control group) is missing or cannot create a sandbox here."""


def limits_from(settings: Settings) -> Limits:
    return Limits(
        timeout_s=settings.sandbox_timeout_s,
        cpu_s=settings.sandbox_cpu_s,
        memory_mb=settings.sandbox_memory_mb,
        max_procs=settings.sandbox_max_procs,
        file_mb=settings.sandbox_file_mb,
        workspace_mb=settings.sandbox_workspace_mb,
        shm_mb=settings.sandbox_shm_mb,
        cpus=settings.sandbox_cpus,
    )


def slot_count(settings: Settings) -> int:
    """How many sandboxes may run at once in this process: the total memory bounds it too."""
    by_memory = settings.sandbox_total_memory_mb // max(1, settings.sandbox_memory_mb)
    return max(0, min(settings.sandbox_concurrency, by_memory))


def _settings_problem(settings: Settings) -> str | None:
    if settings.sandbox_limiter not in LIMITERS:
        return f"SANDBOX_LIMITER must be one of {', '.join(LIMITERS)}, not {settings.sandbox_limiter!r}"
    numbers = {
        "SANDBOX_MEMORY_MB": settings.sandbox_memory_mb,
        "SANDBOX_MAX_PROCS": settings.sandbox_max_procs,
        "SANDBOX_SHM_MB": settings.sandbox_shm_mb,
        "SANDBOX_WORKSPACE_MB": settings.sandbox_workspace_mb,
        "SANDBOX_CONCURRENCY": settings.sandbox_concurrency,
    }
    for name, value in numbers.items():
        if value < 1:
            return f"{name} must be at least 1, not {value}"
    if settings.sandbox_cpus <= 0:
        return f"SANDBOX_CPUS must be above 0, not {settings.sandbox_cpus}"
    if slot_count(settings) < 1:
        return (f"SANDBOX_TOTAL_MEMORY_MB ({settings.sandbox_total_memory_mb}) is below SANDBOX_MEMORY_MB "
                f"({settings.sandbox_memory_mb}): no sandbox fits")
    return None


@lru_cache(maxsize=16)
def _limiter(choice: str, parent: str, total_mb: int) -> cgroup.Limiter | str | None:
    """The control groups to use (None: rlimits only, as asked), or why none can be used."""
    if choice == "rlimits":
        return None
    try:
        return cgroup.setup(choice, parent, total_mb * 1024 * 1024)
    except cgroup.CgroupUnavailable as exc:
        return (f"no control group can limit the sandbox here ({exc}); run the bot as root or in a "
                "delegated cgroup, or set SANDBOX_LIMITER=rlimits to accept per-process limits only")


def limiter_for(settings: Settings) -> cgroup.Limiter | None:
    """The limiter of this configuration; raises SandboxUnavailable when none can be used."""
    problem = _settings_problem(settings)
    if problem:
        raise SandboxUnavailable(problem)
    found = _limiter(settings.sandbox_limiter, settings.sandbox_cgroup, settings.sandbox_total_memory_mb)
    if isinstance(found, str):
        raise SandboxUnavailable(found)
    return found


def unavailable_reason(settings: Settings) -> str | None:
    """Why commands cannot be sandboxed here (None when they can)."""
    bwrap = shutil.which(settings.sandbox_bwrap)
    if bwrap is None:
        return f"bubblewrap ({settings.sandbox_bwrap}) is not installed: install the 'bubblewrap' package"
    if shutil.which("prlimit") is None:
        return "prlimit (util-linux) is not installed"
    reason = _probe(bwrap, settings.sandbox_uid)
    if reason:
        return reason
    try:
        limiter_for(settings)
    except SandboxUnavailable as exc:
        return str(exc)
    return None


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


def _tmpfs(bwrap: str, path: str, size_mb: int, perms: str | None = None) -> list[str]:
    args = ["--perms", perms] if perms else []
    if _supports_tmpfs_size(bwrap):
        args += ["--size", str(size_mb * 1024 * 1024)]
    return [*args, "--tmpfs", path]


def _minimal_dev(bwrap: str, limits: Limits) -> list[str]:
    """A read-only /dev with a few devices and a sized /dev/shm, instead of bwrap's `--dev` (whose
    tmpfs, shm included, has no size cap)."""
    args = _tmpfs(bwrap, "/dev", 1, "0755")
    for name in _DEVICES:
        args += ["--dev-bind", f"/dev/{name}", f"/dev/{name}"]
    args += ["--symlink", "/proc/self/fd", "/dev/fd"]
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        args += ["--symlink", f"/proc/self/fd/{fd}", f"/dev/{name}"]
    args += _tmpfs(bwrap, "/dev/shm", limits.shm_mb, "1777")
    return args


def _nproc(limits: Limits, *, backstop: bool) -> int:
    """RLIMIT_NPROC counts every process of the sandbox uid on the host, across sandboxes. With a
    control group capping each sandbox it is only a backstop, so it leaves room for several
    sandboxes at their cap at once: otherwise one user's fork bomb stops the others' forks."""
    return (limits.max_procs + _HELPER_PROCS) * _BACKSTOP_SANDBOXES if backstop else limits.max_procs


def bwrap_args(bwrap: str, limits: Limits, command: str, *, nproc_backstop: bool = False) -> list[str]:
    """The command line; `nproc_backstop` when a control group caps processes (the rlimit, per uid,
    then only backs it up)."""
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
    args += ["--proc", "/proc", *_minimal_dev(bwrap, limits)]
    for path in ("/work", "/tmp"):
        args += _tmpfs(bwrap, path, limits.workspace_mb)
    # Read-only root and /dev (not their submounts): only /work, /tmp and /dev/shm take writes.
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/work", "--"]
    nproc = _nproc(limits, backstop=nproc_backstop)
    args += [
        "prlimit",
        f"--cpu={limits.cpu_s}",
        f"--as={limits.memory_mb * 1024 * 1024}",
        f"--nproc={nproc}",
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


def _group_limits(limits: Limits) -> cgroup.GroupLimits:
    return cgroup.GroupLimits(
        memory_bytes=limits.memory_mb * 1024 * 1024,
        pids=limits.max_procs + _HELPER_PROCS,
        cpu_quota_us=max(1000, int(limits.cpus * cgroup.CPU_PERIOD_US)),
    )


async def _start(args: list[str], run_as_uid: int, group: cgroup.Group | None) -> asyncio.subprocess.Process:
    """Starts the sandbox; with a group, the process waits at the gate until it is inside it."""
    if group is not None:
        args = ["/bin/sh", "-c", _GATE, "sandbox-gate", *args]
    proc = await asyncio.create_subprocess_exec(
        *args,
        stdin=asyncio.subprocess.PIPE if group is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PATH": _PATH},
        cwd="/",
        start_new_session=True,
        **_drop_privileges(run_as_uid),
    )
    if group is None:
        return proc
    assert proc.stdin is not None
    try:
        cgroup.attach(group, proc.pid)
    except cgroup.CgroupUnavailable:
        proc.stdin.close()  # the gate reads EOF and exits without running anything
        await proc.wait()
        raise
    proc.stdin.write(b"go\n")
    with contextlib.suppress(ConnectionError):
        await proc.stdin.drain()
    proc.stdin.close()
    return proc


def _finish_later(group: cgroup.Group | None) -> None:
    if group is None:
        return
    cgroup.kill(group)
    task = asyncio.ensure_future(cgroup.remove(group))
    _cleanups.add(task)
    task.add_done_callback(_cleanups.discard)


async def run(
    command: str,
    limits: Limits,
    *,
    bwrap: str = "bwrap",
    run_as_uid: int = 65534,
    limiter: cgroup.Limiter | None = None,
) -> Result:
    """Runs `command` with /bin/sh -c in a fresh sandbox (in its own control group when `limiter`
    is given) and returns its capped output."""
    resolved = shutil.which(bwrap)
    if resolved is None:
        raise SandboxUnavailable(f"bubblewrap ({bwrap}) is not installed")
    group = None
    if limiter is not None:
        try:
            group = cgroup.create(limiter, f"{cgroup.GROUP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:10]}",
                                  _group_limits(limits))
        except cgroup.CgroupUnavailable as exc:
            raise SandboxUnavailable(str(exc)) from None
    started = time.monotonic()
    try:
        proc = await _start(bwrap_args(resolved, limits, command, nproc_backstop=group is not None),
                            run_as_uid, group)
        result = await _collect(proc, limits, group)
        if group is not None:
            await cgroup.remove(group)
    except cgroup.CgroupUnavailable as exc:
        _finish_later(group)
        raise SandboxUnavailable(str(exc)) from None
    except BaseException:
        _finish_later(group)  # cancelled (tool timeout, shutdown): nothing may outlive the call
        raise
    result.duration_s = round(time.monotonic() - started, 3)
    if result.exit_code == 1 and result.stderr.startswith("bwrap:") and not result.stdout:
        log.error("sandbox could not start: %s", result.stderr.strip()[:300])
        raise SandboxUnavailable(result.stderr.strip()[:300])
    if result.exit_code == _GATE_FAILED and group is not None and not result.stdout:
        raise SandboxUnavailable("the sandbox could not join its control group")
    return result


async def _collect(proc: asyncio.subprocess.Process, limits: Limits, group: cgroup.Group | None) -> Result:
    """Waits for the sandbox (at most the timeout), reads its output and what its group saw."""
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
        _kill_group(proc.pid)
        readers.cancel()
        raise
    if group is not None:
        cgroup.kill(group)  # whatever escaped the process group (a new session) goes too
    await proc.wait()
    try:
        (out, out_cut), (err, err_cut) = await asyncio.wait_for(readers, timeout=5)
    except TimeoutError:
        readers.cancel()
        out, out_cut, err, err_cut = "", True, "", True
    oom_kills, refused = cgroup.counters(group) if group is not None else (0, 0)
    code = proc.returncode
    if timed_out:
        code = None
    elif code is not None and code >= 128 and code - 128 in _LIMIT_SIGNALS:
        code = -(code - 128)  # the shell reports a signal death as 128+n
    return Result(
        exit_code=code,
        stdout=out,
        stderr=err,
        timed_out=timed_out,
        stdout_truncated=out_cut,
        stderr_truncated=err_cut,
        duration_s=0.0,
        memory_killed=oom_kills > 0,
        procs_refused=refused > 0,
        limits=limits,
    )


async def execute(services: Any, command: str) -> Result:
    """Runs one command with the settings' limits; at most `slot_count` at a time per process, so
    the sandboxes' memory stays within SANDBOX_TOTAL_MEMORY_MB."""
    settings: Settings = services.settings
    limiter = limiter_for(settings)
    slots = services.extra.get("sandbox_slots")
    if slots is None:
        slots = services.extra.setdefault("sandbox_slots", asyncio.Semaphore(slot_count(settings)))
    async with slots:
        return await run(
            command,
            limits_from(settings),
            bwrap=settings.sandbox_bwrap,
            run_as_uid=settings.sandbox_uid,
            limiter=limiter,
        )


def log_availability(settings: Settings) -> str | None:
    """Called at start-up: says once whether bash_execute can be offered."""
    reason = unavailable_reason(settings)
    if reason:
        log.warning("bash_execute is not offered: %s", reason)
        return reason
    limiter = limiter_for(settings)
    per = (f"{settings.sandbox_memory_mb} MB, {settings.sandbox_max_procs} processes, "
           f"{settings.sandbox_cpus:g} CPU each")
    if limiter is None:
        log.warning("bash_execute sandbox limited per process only (SANDBOX_LIMITER=rlimits): a sandbox's "
                    "processes together may use more than %s MB", settings.sandbox_memory_mb)
    else:
        log.info("bash_execute sandbox: %s, limits by %s (%s; %s MB for all, %s at once)",
                 shutil.which(settings.sandbox_bwrap), limiter.detail, per,
                 settings.sandbox_total_memory_mb, slot_count(settings))
    return None
