"""The one driver of an agent turn: the only caller of `run_turn` (bot/agent/loop.py).

A turn runs either for a message, in the worker that took it (handlers/turn/direct.py), or as a
background job that goes on from where the message's turn stopped (handlers/turn/job.py). Both
offer the user's tools, give tools the same context, run the loop with the same setup (the limits,
the quiz's redaction, the prompt-cache key) and are charged by the same meter
(bot.billing.credits.TurnMeter). What differs is the side: where sends go and what the
caller does with the loop's events, held by each side's `TurnSide`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from bot.agent.effects import EffectStore
from bot.agent.events import Final, LoopEvent, TurnOutcome
from bot.agent.llm import prompt_cache_key
from bot.agent.loop import Budget, LoopSide, TurnSetup, TurnState, run_turn
from bot.agent.sse import ToolCall
from bot.agent.toolspec import Tool, ToolContext
from bot.channel.buttons import Menu
from bot.learning.quiz import redact_tool_arguments
from bot.services import Services
from bot.storage.models import User, UserFile

__all__ = ["TurnSide", "drive", "tool_context", "tools_for"]


class TurnSide(LoopSide, Protocol):
    """What a turn's caller holds besides the loop's side: who is served, where, what the turn may
    spend, and what it does with each event the loop yields (`Final` excepted: `drive` returns it)."""

    @property
    def services(self) -> Services: ...
    @property
    def user(self) -> User: ...
    @property
    def conversation_id(self) -> int: ...
    @property
    def channel(self) -> str: ...
    @property
    def budget(self) -> Budget | None: ...
    @property
    def effects(self) -> EffectStore | None: ...
    @property
    def promote_at(self) -> float | None: ...
    @property
    def context_extra(self) -> dict[str, Any]: ...  # the ids a tool's context carries
    @property
    def holds_tool_messages(self) -> bool: ...  # TurnSetup.hold_tool_messages
    @property
    def lent_session(self) -> AsyncSession | None: ...  # TurnSetup.session

    async def deliver(self, text: str = "", media: UserFile | None = None, menu: Menu | None = None) -> Any:
        """Sends what a tool sends (text and/or a file, or a menu); returns the outbound result."""
        ...

    async def on_event(self, event: LoopEvent) -> None: ...


def tools_for(services: Services, user: User,
              names: Collection[str] | None = None) -> tuple[list[Tool], frozenset[str]]:
    """The tools of the user's mode, seen for their role (only those in `names`, the ones a saved
    turn was offered), and the names the model may know from earlier turns."""
    import tools

    offered = tools.offered(services, user.mode or "guest", user.role)
    if names is not None:
        wanted = set(names)
        offered = [t for t in offered if t.name in wanted]
    return offered, tools.known_names(offered)


def tool_context(side: TurnSide, call: ToolCall, progress: Any = None) -> ToolContext:
    """The context one tool call runs with: the user, the conversation, the side's sends."""
    user = side.user
    return ToolContext(
        services=side.services, user_id=user.id, conversation_id=side.conversation_id,
        channel=side.channel, mode=user.mode or "guest", language=user.language or "fr",
        tool_call_id=call.id, deliver=side.deliver, progress=progress, extra=dict(side.context_extra),
    )


async def drive(side: TurnSide, state: TurnState, offered: list[Tool], known: frozenset[str]) -> TurnOutcome:
    """Runs the loop from `state` with the `offered` tools; each event goes to the side; returns
    the outcome."""
    services, user = side.services, side.user
    settings = services.settings
    setup = TurnSetup(
        tools=offered, known_names=known, mode=user.mode or "guest", language=user.language or "fr",
        limits=settings.limits, context_tokens=settings.llm_context_tokens, budget=side.budget,
        effects=side.effects, promote_at=side.promote_at,
        cache_key=prompt_cache_key(settings.secret_key, user.id), redact_arguments=redact_tool_arguments,
        hold_tool_messages=side.holds_tool_messages,
        # A side that saves no state between steps (the message's turn) commits the answer and its
        # charge with the answer's row (bot.channel.outbound) or the message's end.
        settle_at_end=not side.holds_tool_messages,
        session=side.lent_session,
    )
    outcome: TurnOutcome | None = None
    async for event in run_turn(services.llm, state, setup, side):
        if isinstance(event, Final):
            outcome = event.outcome
        else:
            await side.on_event(event)
    assert outcome is not None  # run_turn always ends with Final
    return outcome
