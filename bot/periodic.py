"""What a periodic job is: its name, its period and what it runs, and the key in the shared state
that the process running one period of it holds. Domains define their jobs here; bot.pipeline.scheduler
runs them (each once per period across processes)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.services import Services

__all__ = ["Job", "period_key"]


@dataclass(frozen=True)
class Job:
    name: str
    interval_s: float
    fn: Callable[[Services, datetime], Awaitable[None]]


def period_key(job: Job, period: int) -> str:
    """The key in State that the process running `job` for `period` holds."""
    return f"job:{job.name}:{period}"
