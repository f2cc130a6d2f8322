"""A turn as data: everything it needs to go on, saved after every step.

The loop (bot/agent/loop.py) advances a `TurnState` one step at a time (a model call, then the
tools it asked for). Saved as JSON after each step, it is what lets a turn that outgrows its direct
budget carry on in the background, and another worker take it up from its last step when the one
running it dies. Times are wall-clock seconds (`time.time()`) because the state crosses processes.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from bot.agent.untrusted import TurnSources

ANSWERED = "answered"


@dataclass
class TurnState:
    messages: list[dict[str, Any]]  # what the model sees next: system, history, this turn so far
    started: float  # when the turn began
    deadline: float  # by when it must have answered (the last step is forced to text before it)
    iteration: int = 0  # model steps taken; the cap (max_iterations) counts them across processes
    shown: list[str] = field(default_factory=list)  # texts the user was given, in order
    position: int = 0  # tool calls so far: the key of a side effect is its position
    taken_ids: list[str] = field(default_factory=list)  # tool-call ids used in the conversation
    progress_sent: bool = False  # the one "working on it" note of the turn went out
    force_now: bool = False  # a model call ran into the reserve: the next step answers
    images_replaced: bool = False  # the provider refused images once; their text is used instead
    model_calls: int = 0  # numbers the charges of a background turn (one ledger ref per call)
    exit_reason: str = ANSWERED
    done: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, served from the provider's cache
    charged_tokens: int = 0  # what the budget counts: cached tokens at CACHED_TOKENS_FACTOR
    iterations: list[dict[str, Any]] = field(default_factory=list)
    tool_runs: list[dict[str, Any]] = field(default_factory=list)
    sources: dict[str, list[str]] = field(default_factory=dict)  # TurnSources, as lists
    side_effects: dict[str, dict[str, Any]] = field(default_factory=dict)  # TurnMemory's results
    tool_names: list[str] = field(default_factory=list)  # the tools offered (the code is not saved)
    effects_from: int = 0  # the message's tool calls from earlier runs (EffectStore.first_position)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnState:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def new_state(messages: list[dict[str, Any]], *, timeout_s: float,
              taken_ids: set[str] | None = None, now: float | None = None) -> TurnState:
    """The state of a turn about to start from `messages` (system prompt, history, the message)."""
    started = time.time() if now is None else now
    taken = (
        taken_ids
        if taken_ids is not None
        else {c.get("id", "") for m in messages for c in (m.get("tool_calls") or [])}
    )
    return TurnState(
        messages=list(messages),
        started=started,
        deadline=started + timeout_s,
        taken_ids=sorted(taken),
        sources=sources_to_json(TurnSources.for_turn(messages)),
    )


def sources_to_json(sources: TurnSources) -> dict[str, list[str]]:
    return {f.name: sorted(getattr(sources, f.name)) for f in fields(sources)}


def sources_from_json(data: dict[str, list[str]]) -> TurnSources:
    names = {f.name for f in fields(TurnSources)}
    return TurnSources(**{k: set(v) for k, v in data.items() if k in names})
