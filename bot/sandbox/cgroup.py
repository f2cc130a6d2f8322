"""Control groups for the code sandbox: one group per command, all under one parent group.

Each command gets its own group with a memory cap (every process of the sandbox together, tmpfs
pages included), a process cap and a CPU quota; the parent group caps the memory of all sandboxes
together (SANDBOX_TOTAL_MEMORY_MB), so however many run at once the host keeps its memory.

Two ways, tried in this order:
- cgroup v2 (`memory.max`, `pids.max`, `cpu.max`): the parent is made under the bot's own group
  when the memory, pids and cpu controllers can be enabled for children there (a delegated group,
  e.g. systemd's `Delegate=yes`), else under the hierarchy's root. In a container whose own
  namespace root holds processes, those are moved into a leaf first: v2 enables controllers for
  children only of a group without processes of its own.
- cgroup v1 (`memory.limit_in_bytes`, `pids.max`, `cpu.cfs_quota_us`): the parent is made under
  the bot's own group of each of the memory, pids and cpu hierarchies (hybrid or v1-only hosts).

Writes need root or a group delegated to the bot's user; `setup` says why when neither works.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import errno
import logging
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

from bot.sandbox.errors import SandboxError

log = logging.getLogger(__name__)

CONTROLLERS = ("memory", "pids", "cpu")
GROUP_PREFIX = "sbx-"
CPU_PERIOD_US = 100_000
_LEAF = "deblo-main"  # where a container's own processes go when its root must enable controllers
_MOUNTINFO = Path("/proc/self/mountinfo")
_OWN = Path("/proc/self/cgroup")
_to_remove: set[Path] = set()


class CgroupUnavailable(SandboxError, RuntimeError):
    """No control group can be made here; the message says why."""


@dataclass(frozen=True)
class Limiter:
    kind: str  # "cgroup2" | "cgroup1"
    parents: tuple[tuple[str, Path], ...]  # (controller, parent dir); v2 has one entry with ""
    detail: str  # for the start-up line
    name: str = ""
    total_bytes: int = 0


@dataclass(frozen=True)
class GroupLimits:
    memory_bytes: int
    pids: int
    cpu_quota_us: int  # per CPU_PERIOD_US


@dataclass
class Group:
    kind: str
    dirs: dict[str, Path] = field(default_factory=dict)


def _read(path: Path) -> str:
    return path.read_text().strip()


def _write(path: Path, value: str) -> None:
    # One write per value: cgroup files take a whole value per write(2).
    with open(path, "w") as handle:
        handle.write(value)


def _write_optional(path: Path, value: str) -> None:
    """Files some kernels lack (swap accounting off, old kernels): best effort."""
    with contextlib.suppress(OSError):
        _write(path, value)


def _mounts() -> list[tuple[str, Path, str, set[str]]]:
    """(root inside the hierarchy, mount point, fs type, super options) of each cgroup mount."""
    found = []
    for line in _MOUNTINFO.read_text().splitlines():
        head, _, tail = line.partition(" - ")
        fields_ = head.split()
        fstype, _source, superopts = [*tail.split(), "", "", ""][:3]
        if fstype in ("cgroup", "cgroup2"):
            found.append((fields_[3], Path(fields_[4]), fstype, set(superopts.split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """This process's group per v1 controller, and under "" its v2 group."""
    own: dict[str, str] = {}
    for line in _OWN.read_text().splitlines():
        _hier, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            own[name] = path
    return own


def _inside(mount_root: str, mount_point: Path, path: str) -> Path:
    relative = os.path.relpath(path, mount_root) if path.startswith(mount_root) else "."
    return (mount_point / relative).resolve() if relative != "." else mount_point


# --- setting up the parent group -------------------------------------------------------------------


def setup(choice: str, parent_name: str, total_memory_bytes: int) -> Limiter:
    """The limiter to use, its parent group made and capped; raises CgroupUnavailable."""
    if not parent_name or "/" in parent_name or parent_name.startswith("."):
        raise CgroupUnavailable(f"invalid group name {parent_name!r}")
    reasons = []
    attempts = [("cgroup2", _setup_v2), ("cgroup1", _setup_v1)]
    for kind, attempt in attempts:
        if choice not in ("auto", kind):
            continue
        try:
            return attempt(parent_name, total_memory_bytes)
        except CgroupUnavailable as exc:
            reasons.append(f"{kind}: {exc}")
        except OSError as exc:
            reasons.append(f"{kind}: {exc.strerror or exc}")
    raise CgroupUnavailable("; ".join(reasons) or f"unknown limiter {choice!r}")


def _enable(base: Path, may_evacuate: bool) -> None:
    available = set(_read(base / "cgroup.controllers").split())
    missing = [c for c in CONTROLLERS if c not in available]
    if missing:
        raise CgroupUnavailable(f"{base} does not offer the {', '.join(missing)} controller(s)")
    enabled = set(_read(base / "cgroup.subtree_control").split())
    wanted = " ".join(f"+{c}" for c in CONTROLLERS if c not in enabled)
    if not wanted:
        return
    try:
        _write(base / "cgroup.subtree_control", wanted)
    except OSError as exc:
        if exc.errno != errno.EBUSY or not may_evacuate:
            raise CgroupUnavailable(f"cannot enable controllers in {base}: {exc.strerror}") from None
        _evacuate(base)
        _write(base / "cgroup.subtree_control", wanted)


def _evacuate(base: Path) -> None:
    leaf = base / _LEAF
    leaf.mkdir(exist_ok=True)
    for pid in _read(base / "cgroup.procs").split():
        with contextlib.suppress(ProcessLookupError, OSError):  # gone, or a kernel thread
            _write(leaf / "cgroup.procs", pid)
    log.info("moved the processes of %s into %s to enable controllers for the sandboxes", base, leaf)


def _setup_v2(parent_name: str, total: int) -> Limiter:
    mounts = [(root, point) for root, point, fstype, _ in _mounts() if fstype == "cgroup2"]
    if not mounts:
        raise CgroupUnavailable("no cgroup2 file system is mounted")
    root, point = mounts[0]
    own_path = _own_paths().get("", "/")
    own = _inside(root, point, own_path)
    reasons = []
    for base in dict.fromkeys([own, point]):
        try:
            # Processes are moved out only of a namespace root (everything in it is ours) or of a
            # group delegated to our unprivileged user (systemd's Delegate=yes asks for exactly that).
            ours = base == own and os.geteuid() != 0 and base.stat().st_uid == os.geteuid()
            _enable(base, may_evacuate=ours or (base == point and own_path == "/"))
            parent = base / parent_name
            parent.mkdir(exist_ok=True)
            _enable(parent, may_evacuate=False)
            _write(parent / "memory.max", str(total))
            _write_optional(parent / "memory.swap.max", "0")
        except (CgroupUnavailable, OSError) as exc:
            reasons.append(str(exc) if isinstance(exc, CgroupUnavailable) else f"{base}: {exc.strerror}")
            continue
        _sweep([parent])
        return _made(Limiter("cgroup2", (("", parent),), f"cgroup v2 at {parent}", parent_name, total))
    raise CgroupUnavailable("; ".join(reasons))


def _setup_v1(parent_name: str, total: int) -> Limiter:
    own = _own_paths()
    parents: list[tuple[str, Path]] = []
    for controller in CONTROLLERS:
        match = [(root, point) for root, point, fstype, opts in _mounts()
                 if fstype == "cgroup" and controller in opts]
        if not match or controller not in own:
            raise CgroupUnavailable(f"no v1 hierarchy for the {controller} controller")
        parent = _inside(match[0][0], match[0][1], own[controller]) / parent_name
        try:
            parent.mkdir(exist_ok=True)
        except OSError as exc:
            raise CgroupUnavailable(f"cannot make {parent}: {exc.strerror}") from None
        parents.append((controller, parent))
    memory = dict(parents)["memory"]
    _write_optional(memory / "memory.use_hierarchy", "1")  # children count against the parent
    _limit_v1_memory(memory, total)
    _sweep([p for _, p in parents])
    where = ", ".join(f"{c} at {p}" for c, p in parents)
    return _made(Limiter("cgroup1", tuple(parents), f"cgroup v1 ({where})", parent_name, total))


def _limit_v1_memory(path: Path, limit: int) -> None:
    """memory (and memory+swap, where accounted) at `limit`. The kernel wants memsw >= memory at
    every step, so memsw is written before (raising) and after (lowering) the memory limit."""
    _write_optional(path / "memory.memsw.limit_in_bytes", str(limit))
    _write(path / "memory.limit_in_bytes", str(limit))
    _write_optional(path / "memory.memsw.limit_in_bytes", str(limit))


def _made(limiter: Limiter) -> Limiter:
    if not _to_remove:
        atexit.register(_remove_parents)
    _to_remove.update(path for _, path in limiter.parents)
    return limiter


def _remove_parents() -> None:
    """At exit: the parent groups go if no other process uses them (an empty group left in a
    hierarchy would keep the group above it from being removed)."""
    _sweep(list(_to_remove), include_own=True)
    for path in _to_remove:
        with contextlib.suppress(OSError):
            path.rmdir()


def _ensure_parents(limiter: Limiter) -> None:
    """Makes the parents again if something removed them since start-up (another process's exit)."""
    if all(path.is_dir() for _, path in limiter.parents):
        return
    again = setup(limiter.kind, limiter.name, limiter.total_bytes)
    if again.parents != limiter.parents:
        raise CgroupUnavailable(f"the sandboxes' group moved to {again.detail}")


def _sweep(parents: list[Path], include_own: bool = False) -> None:
    """Removes groups left by a bot process that was killed before cleaning up (`sbx-<pid>-…` of a
    pid no longer running, or of this one at exit; a busy group cannot be removed anyway)."""
    for parent in parents:
        if not parent.is_dir():
            continue
        for child in parent.iterdir():
            owner = child.name.removeprefix(GROUP_PREFIX).split("-", 1)[0]
            if not child.is_dir() or not child.name.startswith(GROUP_PREFIX) or not owner.isdigit():
                continue
            if _alive(int(owner)) and not (include_own and int(owner) == os.getpid()):
                continue
            with contextlib.suppress(OSError):
                child.rmdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --- one group per sandbox -------------------------------------------------------------------------


def create(limiter: Limiter, name: str, limits: GroupLimits) -> Group:
    """Makes the sandbox's group with its caps; raises CgroupUnavailable (nothing left behind)."""
    group = Group(kind=limiter.kind)
    _ensure_parents(limiter)
    try:
        for controller, parent in limiter.parents:
            path = parent / name
            path.mkdir()
            group.dirs[controller] = path
        if limiter.kind == "cgroup2":
            path = group.dirs[""]
            _write(path / "memory.max", str(limits.memory_bytes))
            _write_optional(path / "memory.swap.max", "0")
            _write_optional(path / "memory.oom.group", "1")  # an OOM ends the whole sandbox
            _write(path / "pids.max", str(limits.pids))
            _write(path / "cpu.max", f"{limits.cpu_quota_us} {CPU_PERIOD_US}")
        else:
            _limit_v1_memory(group.dirs["memory"], limits.memory_bytes)
            _write(group.dirs["pids"] / "pids.max", str(limits.pids))
            _write(group.dirs["cpu"] / "cpu.cfs_period_us", str(CPU_PERIOD_US))
            _write(group.dirs["cpu"] / "cpu.cfs_quota_us", str(limits.cpu_quota_us))
    except OSError as exc:
        _rmdirs(group)
        raise CgroupUnavailable(f"cannot make the sandbox's group: {exc.strerror or exc}") from None
    return group


def attach(group: Group, pid: int) -> None:
    """Moves process `pid` (not yet running the command) into every directory of the group."""
    try:
        for path in group.dirs.values():
            _write(path / "cgroup.procs", str(pid))
    except OSError as exc:
        raise CgroupUnavailable(f"cannot move the sandbox into its group: {exc.strerror or exc}") from None


def _counter(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def counters(group: Group) -> tuple[int, int]:
    """(processes killed for memory, forks refused for the process cap) so far in this group."""
    if group.kind == "cgroup2":
        path = group.dirs.get("")
        if path is None:
            return 0, 0
        return _counter(path / "memory.events", "oom_kill"), _counter(path / "pids.events", "max")
    memory, pids = group.dirs.get("memory"), group.dirs.get("pids")
    oom = _counter(memory / "memory.oom_control", "oom_kill") if memory else 0
    refused = _counter(pids / "pids.events", "max") if pids else 0
    return oom, refused


def pids(group: Group) -> list[int]:
    found: set[int] = set()
    for path in group.dirs.values():
        with contextlib.suppress(OSError, ValueError):
            found.update(int(p) for p in _read(path / "cgroup.procs").split())
    return sorted(found)


def kill(group: Group) -> None:
    """SIGKILLs everything in the group (v2 in one write; v1 process by process)."""
    path = group.dirs.get("")
    if path is not None and (path / "cgroup.kill").exists():
        _write_optional(path / "cgroup.kill", "1")
    for pid in pids(group):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _rmdirs(group: Group) -> bool:
    for controller, path in list(group.dirs.items()):
        try:
            path.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            continue
        del group.dirs[controller]
    return not group.dirs


async def remove(group: Group, *, attempts: int = 100) -> None:
    """Kills what is left and removes the group once the kernel has emptied it."""
    for _ in range(attempts):
        if _rmdirs(group):
            return
        kill(group)
        await asyncio.sleep(0.05)
    log.warning("sandbox group not removed (processes still in it): %s", list(group.dirs.values()))
