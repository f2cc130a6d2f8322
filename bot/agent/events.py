"""What a turn tells its caller as it runs, and how it ended.

`run_turn` (bot/agent/loop.py) yields `LoopEvent`s, small frozen dataclasses, in this order: a
`StepStarted` per step (a model call, then its tools), `Text` for the user (written before tool
calls, or the answer), `ToolStarted`/`ToolEnded` per call with at most one `ToolProgress` per turn,
`LongWork` when the direct budget passed while a tool still works, `Promote` when the turn goes on
in the background, and always, last, one `Final` with the `TurnOutcome`.

Each event's `kind` is the name the seed gives it ("step", "text", "tool_start", …): the job's
timeline stores tool events under those names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from bot.agent.turn_state import TurnState

__all__ = [
    "ExitReason", "Final", "LongWork", "LoopEvent", "Promote", "StepStarted", "Text", "ToolEnded",
    "ToolEvent", "ToolProgress", "ToolStarted", "TurnOutcome",
]


class ExitReason(StrEnum):
    """Why a turn ended. Stored as its string (TurnState.exit_reason, the turn's record)."""

    ANSWERED = "answered"
    FORCED_MAX_ITERATIONS = "forced_max_iterations"
    FORCED_DEADLINE = "forced_deadline"
    PROVIDER_ERROR = "provider_error"
    EMPTY_ANSWER = "empty_answer"
    ABORTED = "aborted"
    OVER_BUDGET = "over_budget"
    PROMOTED = "promoted"  # the turn goes on in the background (its state was saved)
    CANCELLED = "cancelled"  # the side's should_stop() said so before a step


@dataclass(frozen=True, slots=True)
class StepStarted:
    kind: ClassVar[str] = "step"
    n: int


@dataclass(frozen=True, slots=True)
class Text:
    kind: ClassVar[str] = "text"
    text: str


@dataclass(frozen=True, slots=True)
class ToolStarted:
    kind: ClassVar[str] = "tool_start"
    name: str
    tool_call_id: str
    arguments: dict[str, Any] | None
    n: int = 0  # the step; the executor does not know it, the step's batch sets it


@dataclass(frozen=True, slots=True)
class ToolEnded:
    kind: ClassVar[str] = "tool_end"
    name: str
    tool_call_id: str
    status: str  # ok | error | timeout | cancelled | skipped
    duration_ms: int
    n: int = 0


@dataclass(frozen=True, slots=True)
class ToolProgress:
    kind: ClassVar[str] = "tool_progress"
    name: str
    note: str


@dataclass(frozen=True, slots=True)
class LongWork:
    kind: ClassVar[str] = "long_work"


@dataclass(frozen=True, slots=True)
class Promote:
    kind: ClassVar[str] = "promote"


@dataclass
class TurnOutcome:
    exit_reason: ExitReason
    text: str  # everything the user was shown in this run, joined
    iterations: list[dict[str, Any]] = field(default_factory=list)
    new_messages: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    tool_runs: list[dict[str, Any]] = field(default_factory=list)
    state: TurnState | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def detail(self) -> dict[str, Any]:
        return {"iterations": self.iterations, "tools": self.tool_runs}


@dataclass(frozen=True, slots=True)
class Final:
    kind: ClassVar[str] = "final"
    outcome: TurnOutcome


ToolEvent = ToolStarted | ToolEnded | ToolProgress
LoopEvent = StepStarted | Text | ToolStarted | ToolEnded | ToolProgress | LongWork | Promote | Final
