"""What a turn runs with besides its state: its setup (`TurnSetup`: the tools, the caps, the
budget) and the caller's side (`LoopSide`: where the turn's messages are kept, its text streamed,
its state saved, and whether it should stop). The loop (bot/agent/loop.py) takes both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from bot.agent.effects import EffectStore
from bot.agent.sse import ToolCall
from bot.agent.toolspec import Tool, ToolContext
from bot.agent.turn_state import TurnState
from bot.config import Limits

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["Budget", "LoopSide", "Message", "QuietSide", "TurnSetup"]

Message = dict[str, Any]


@dataclass
class Budget:
    """The most tokens a turn may use (None: no ceiling), and who is told what each call used;
    `notice` ({"fr": …, "en": …}) is what the turn ends with when the ceiling is reached, when it is
    not the credits that ran out (the day's token limit). `settle` makes what `spend` recorded
    durable when `spend` does not itself: the loop calls it before tools run (but those that only
    read in the turn's session), before another model call and at the turn's end, so a charge
    waits at most for the answer it is saved with."""

    tokens: int | None = None
    spend: Callable[[int], Awaitable[None]] | None = None
    notice: dict[str, str] | None = None
    settle: Callable[[], Awaitable[None]] | None = None


@dataclass(frozen=True)
class TurnSetup:
    """What a turn runs with besides its state: the tools offered (and the names the model may know
    from earlier turns), the caps, the budget, and the keys of its side effects.

    `redact_arguments(name, arguments)` rewrites a call's arguments as history keeps them, after
    the tool ran with the real ones (a quiz's answer must not travel again to the model).
    `effects` keys the side effects of tool calls so that a re-run of the turn does not repeat them.
    """

    tools: Sequence[Tool] = ()
    known_names: Collection[str] = ()
    mode: str = "child"
    language: str = "fr"
    limits: Limits = field(default_factory=Limits)
    context_tokens: int = 32_000
    budget: Budget | None = None
    effects: EffectStore | None = None
    promote_at: float | None = None
    cache_key: str | None = None  # the provider's prompt-cache key (one per user)
    redact_arguments: Callable[[str, str], str] | None = None
    # A tool step's messages go to the side with the next ones (the answer's, or before the next
    # tools run) rather than in a write of their own: for a side that saves no state between steps.
    hold_tool_messages: bool = False
    # The last call's charge and the answer are left in the budget's session for what the side
    # commits next (the answer's row, recorded in that session, or the message's end) rather than
    # settled in a transaction of their own as the turn ends.
    settle_at_end: bool = True
    # The turn's session, lent to a step whose calls are all `reads_only` tools: they read in the
    # turn's transaction (with the call's charge not yet committed) rather than in one of their
    # own, and the step's messages wait for the next ones. None: every tool takes its own session.
    session: AsyncSession | None = None


class LoopSide(Protocol):
    """The caller's part of a turn: what the loop hands over as it runs, and what it asks."""

    @property
    def streams(self) -> bool:
        """Whether `on_text` gets the model's text as it streams."""
        ...

    def make_context(self, call: ToolCall) -> ToolContext:
        """The context a tool call runs with (who, where, how it sends)."""
        ...

    def on_text(self, chunk: str) -> bool:
        """A piece of the step's text as the model writes it (not awaited); true once some was
        shown to the user. The step's `Text` event still carries all of it, so the caller can tell
        what it has shown already. A stream cut before anything was shown is asked again."""
        ...

    async def on_messages(self, new: list[Message]) -> None:
        """Messages the turn added to the conversation, to keep as history."""
        ...

    async def without_images(self, messages: list[Message]) -> list[Message] | None:
        """The messages with their images replaced by text (OCR), when the provider refuses image
        input; None when the caller cannot. Asked once per turn."""
        ...

    async def save(self, state: TurnState) -> None:
        """The state after a step, for a turn resumed elsewhere."""
        ...

    async def should_stop(self) -> bool:
        """Asked before every step: true ends the turn as cancelled."""
        ...


@dataclass
class QuietSide:
    """A side that keeps nothing, streams nothing and never stops: a turn run on its own (a bench),
    its tools run with `tool_context`'s contexts."""

    tool_context: Callable[[ToolCall], ToolContext] | None = None
    streams = False

    def make_context(self, call: ToolCall) -> ToolContext:
        if self.tool_context is None:
            raise RuntimeError("tools offered without a context to run them in")
        return self.tool_context(call)

    def on_text(self, chunk: str) -> bool:
        return False

    async def on_messages(self, new: list[Message]) -> None:
        return None

    async def without_images(self, messages: list[Message]) -> list[Message] | None:
        return None

    async def save(self, state: TurnState) -> None:
        return None

    async def should_stop(self) -> bool:
        return False
