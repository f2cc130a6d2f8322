"""What one check found, and the table the operator reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    OK = "OK"
    OFF = "OFF"  # not configured: the bot runs without it (said so the operator is not surprised)
    WARN = "WARN"  # works, but a risk the operator should look at (doctor still exits 0)
    FAIL = "FAIL"  # configured or needed, and not working: fix it


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    reason: str
    fix: str = ""


def ok(name: str, reason: str) -> Check:
    return Check(name, Status.OK, reason)


def off(name: str, reason: str, fix: str = "") -> Check:
    return Check(name, Status.OFF, reason, fix)


def warn(name: str, reason: str, fix: str) -> Check:
    return Check(name, Status.WARN, reason, fix)


def fail(name: str, reason: str, fix: str) -> Check:
    return Check(name, Status.FAIL, reason, fix)


def failed(checks: Sequence[Check]) -> bool:
    return any(c.status is Status.FAIL for c in checks)


def table(checks: Sequence[Check]) -> str:
    """One line per check: name, status, reason, and the fix on its own indented line."""
    width = max((len(c.name) for c in checks), default=0)
    lines = []
    for c in checks:
        lines.append(f"{c.name:<{width}}  {c.status.value:<4}  {c.reason}")
        if c.fix:
            lines.append(f"{'':<{width}}        fix: {c.fix}")
    return "\n".join(lines)
