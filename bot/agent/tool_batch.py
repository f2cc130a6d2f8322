"""One step's tool calls, run by the executor while their events are passed on as they happen.

While the calls run, the user may be owed two things: the turn's one short progress note (a tool
runs longer than `progress_note_after_s`), and, when the turn's direct budget passes while a tool
still works, a `LongWork` event, so the caller can say at once that the work goes on in the
background (it is promoted once the batch is done: a running tool is not cut).

The batch sees the turn through `BatchHost`, the few things it reads of it, so that the loop
(bot/agent/loop.py) and this module do not import each other.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from dataclasses import replace
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from bot.agent.effects import EffectStore
from bot.agent.events import LongWork, ToolEnded, ToolEvent, ToolProgress, ToolStarted
from bot.agent.executor import CallOutcome, TurnMemory, complete_outcomes, execute_calls
from bot.agent.sse import ToolCall
from bot.agent.toolspec import Tool, ToolContext
from bot.agent.turn_state import TurnState, sources_from_json, sources_to_json
from bot.config import Limits

__all__ = ["BatchHost", "run_batch"]

DEFAULT_PROGRESS = {"fr": "⏳ Je travaille dessus, un instant…", "en": "⏳ Working on it, one moment…"}


class BatchHost(Protocol):
    """What a step's batch reads of its turn."""

    @property
    def state(self) -> TurnState: ...
    @property
    def limits(self) -> Limits: ...
    @property
    def reserve(self) -> float: ...  # seconds kept for the final answer
    @property
    def by_name(self) -> Mapping[str, Tool]: ...
    @property
    def known_names(self) -> Collection[str]: ...
    @property
    def mode(self) -> str: ...
    @property
    def lang(self) -> str: ...
    @property
    def effects(self) -> EffectStore | None: ...
    @property
    def promote_at(self) -> float | None: ...
    def make_context(self, call: ToolCall) -> ToolContext: ...


class _Mark:
    """A signal on the batch's queue, beside the executor's events."""


_DONE = _Mark()  # the executor finished
_TICK = _Mark()  # a due time passed (put on the queue by the batch's timer)
_Queue = asyncio.Queue[ToolEvent | _Mark]


def _progress_sender(queue: _Queue, name: str) -> Callable[[str], Any]:
    async def progress(note: str) -> None:
        queue.put_nowait(ToolProgress(name, note))

    return progress


def _context_maker(turn: BatchHost, queue: _Queue, images: list[dict[str, Any]],
                   sources: Any, session: AsyncSession | None) -> Callable[[ToolCall], ToolContext]:
    def make(call: ToolCall) -> ToolContext:
        ctx = turn.make_context(call)
        ctx.session = session
        ctx.extra["images"] = images
        tool = turn.by_name.get(call.name)
        if ctx.progress is None:
            ctx.progress = _progress_sender(queue, call.name)
        if ctx.turn is None:
            ctx.turn = sources
        ctx.extra.setdefault("progress_default", (tool.progress_note or {}) if tool else {})
        return ctx

    return make


def _default_note(turn: BatchHost, calls: list[ToolCall], into: list[CallOutcome | None]) -> ToolProgress:
    running = [c for c, o in zip(calls, into, strict=True) if o is None]
    tool = turn.by_name.get(running[0].name) if running else None
    note = (tool.progress_note or {}) if tool else {}
    return ToolProgress(tool.name if tool else "",
                        note.get(turn.lang) or note.get("fr") or DEFAULT_PROGRESS[turn.lang])


async def run_batch(turn: BatchHost, n: int, calls: list[ToolCall], images: list[dict[str, Any]],
                    outcomes: list[CallOutcome],
                    session: AsyncSession | None = None) -> AsyncIterator[ToolEvent | LongWork]:
    """Runs `calls`, yields their events, and fills `outcomes` (one per call, in order). With the
    turn's `session` lent (all the calls only read), they run one after the other, and the turn
    waits for them before their events come: nothing else uses the session meanwhile."""
    s = turn.state
    queue: _Queue = asyncio.Queue()
    into: list[CallOutcome | None] = [None] * len(calls)
    sources = sources_from_json(s.sources)
    sources.begin_step()  # these calls were written after the results of the steps before
    memory = TurnMemory(side_effect_results=s.side_effects)
    tool_timeout = min(turn.limits.tool_timeout_s, s.deadline - turn.reserve - time.time())
    tools = turn.by_name
    if session is not None:  # one session: one call at a time
        tools = {name: replace(tool, exclusive=True) for name, tool in tools.items()}
    task = asyncio.create_task(
        execute_calls(
            calls, tools=tools, known_names=turn.known_names, mode=turn.mode,
            make_context=_context_maker(turn, queue, images, sources, session), timeout_s=tool_timeout,
            memory=memory, emit=queue.put_nowait, into=into,
            max_calls=turn.limits.max_tool_calls_per_response, effects=turn.effects,
            first_position=s.position,
        )
    )
    s.position += len(calls)
    task.add_done_callback(lambda _task: queue.put_nowait(_DONE))
    try:
        if session is not None:
            await asyncio.wait([task])  # its events, queued before _DONE, follow
        async for event in _events(turn, queue, time.monotonic(), calls, into):
            yield replace(event, n=n) if isinstance(event, ToolStarted | ToolEnded) else event
        task.result()
    finally:
        if not task.done():
            task.cancel()
            try:
                await task
            except BaseException:  # cancelled on purpose; its outcome is not needed
                pass
        s.sources = sources_to_json(sources)
        s.side_effects = memory.side_effect_results
    outcomes.extend(complete_outcomes(calls, list(into)))


def _due(turn: BatchHost, started: float, told_long: bool) -> float | None:
    """When the next note is owed (monotonic), or None when none is."""
    waits = []
    if not turn.state.progress_sent:
        waits.append(started + turn.limits.progress_note_after_s)
    if not told_long and turn.promote_at is not None:
        waits.append(time.monotonic() + turn.promote_at - time.time())
    return min(waits) if waits else None


async def _events(turn: BatchHost, queue: _Queue, started: float, calls: list[ToolCall],
                  into: list[CallOutcome | None]) -> AsyncIterator[ToolEvent | LongWork]:
    """The executor's events until it is done, plus the progress note and `LongWork` when due.
    One timer per due time puts a tick on the queue (not a timeout around every event: with
    hundreds of conversations, those timers were a visible share of the loop's time)."""
    s = turn.state
    told_long = turn.promote_at is None
    loop = asyncio.get_running_loop()
    due = _due(turn, started, told_long)
    timer = None if due is None else loop.call_later(due - time.monotonic(), queue.put_nowait, _TICK)
    try:
        while True:
            event = await queue.get()
            if event is _DONE:
                return
            if isinstance(event, _Mark):  # _TICK
                if not told_long and turn.promote_at is not None and time.time() >= turn.promote_at:
                    told_long = True
                    yield LongWork()
                elif not s.progress_sent and time.monotonic() >= started + turn.limits.progress_note_after_s:
                    s.progress_sent = True
                    yield _default_note(turn, calls, into)
                due = _due(turn, started, told_long)
                timer = None if due is None else loop.call_later(
                    due - time.monotonic(), queue.put_nowait, _TICK)
                continue
            if isinstance(event, ToolProgress):
                if s.progress_sent:
                    continue
                s.progress_sent = True
            yield event
    finally:
        if timer is not None:
            timer.cancel()
