"""One step's tool calls, run by the executor while their events are passed on as they happen.

While the calls run, the user may be owed two things: the turn's one short progress note (a tool
runs longer than `progress_note_after_s`), and, when the turn's direct budget passes while a tool
still works, a `long_work` event, so the caller can say at once that the work goes on in the
background (it is promoted once the batch is done: a running tool is not cut).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from bot.agent.executor import CallOutcome, TurnMemory, complete_outcomes, execute_calls
from bot.agent.sse import ToolCall
from bot.agent.toolspec import ToolContext
from bot.agent.turn_state import sources_from_json, sources_to_json

if TYPE_CHECKING:
    from bot.agent.loop import _Turn

_DONE: dict[str, Any] = {"type": "_done"}  # the executor finished (put on the event queue)
DEFAULT_PROGRESS = {"fr": "⏳ Je travaille dessus, un instant…", "en": "⏳ Working on it, one moment…"}


def _progress_sender(queue: asyncio.Queue[dict[str, Any]], name: str) -> Callable[[str], Any]:
    async def progress(note: str) -> None:
        queue.put_nowait({"type": "tool_progress", "name": name, "note": note})

    return progress


def _context_maker(turn: _Turn, queue: asyncio.Queue[dict[str, Any]], images: list[dict[str, Any]],
                   sources: Any) -> Callable[[ToolCall], ToolContext]:
    def make(call: ToolCall) -> ToolContext:
        if turn.make_context is None:
            raise RuntimeError("tools offered without a make_context")
        ctx = turn.make_context(call)
        ctx.extra["images"] = images
        tool = turn.by_name.get(call.name)
        if ctx.progress is None:
            ctx.progress = _progress_sender(queue, call.name)
        if ctx.turn is None:
            ctx.turn = sources
        ctx.extra.setdefault("progress_default", (tool.progress_note or {}) if tool else {})
        return ctx

    return make


def _default_note(turn: _Turn, calls: list[ToolCall], into: list[CallOutcome | None]) -> dict[str, Any]:
    running = [c for c, o in zip(calls, into, strict=True) if o is None]
    tool = turn.by_name.get(running[0].name) if running else None
    note = (tool.progress_note or {}) if tool else {}
    return {
        "type": "tool_progress",
        "name": tool.name if tool else "",
        "note": note.get(turn.lang) or note.get("fr") or DEFAULT_PROGRESS[turn.lang],
    }


async def run_batch(turn: _Turn, n: int, calls: list[ToolCall], images: list[dict[str, Any]],
                    outcomes: list[CallOutcome]) -> AsyncIterator[dict[str, Any]]:
    """Runs `calls`, yields their events, and fills `outcomes` (one per call, in order)."""
    s = turn.state
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    into: list[CallOutcome | None] = [None] * len(calls)
    sources = sources_from_json(s.sources)
    memory = TurnMemory(side_effect_results=s.side_effects)
    tool_timeout = min(turn.limits.tool_timeout_s, s.deadline - turn.reserve - time.time())
    task = asyncio.create_task(
        execute_calls(
            calls, tools=turn.by_name, known_names=turn.known_names, mode=turn.mode,
            make_context=_context_maker(turn, queue, images, sources), timeout_s=tool_timeout,
            memory=memory, emit=queue.put_nowait, into=into,
            max_calls=turn.limits.max_tool_calls_per_response, effects=turn.effects,
            first_position=s.position,
        )
    )
    s.position += len(calls)
    task.add_done_callback(lambda _task: queue.put_nowait(_DONE))
    try:
        async for event in _events(turn, queue, time.monotonic(), calls, into):
            if event["type"] in ("tool_start", "tool_end"):
                event.setdefault("n", n)
            yield event
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


_TICK: dict[str, Any] = {"type": "_tick"}  # a due time passed (put on the queue by the batch's timer)


def _due(turn: _Turn, started: float, told_long: bool) -> float | None:
    """When the next note is owed (monotonic), or None when none is."""
    waits = []
    if not turn.state.progress_sent:
        waits.append(started + turn.limits.progress_note_after_s)
    if not told_long:
        waits.append(time.monotonic() + turn.promote_at - time.time())  # type: ignore[operator]
    return min(waits) if waits else None


async def _events(turn: _Turn, queue: asyncio.Queue[dict[str, Any]], started: float,
                  calls: list[ToolCall], into: list[CallOutcome | None]) -> AsyncIterator[dict[str, Any]]:
    """The executor's events until it is done, plus the progress note and `long_work` when due.
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
            if event is _TICK:
                if not told_long and time.time() >= turn.promote_at:  # type: ignore[operator]
                    told_long = True
                    yield {"type": "long_work"}
                elif not s.progress_sent and time.monotonic() >= started + turn.limits.progress_note_after_s:
                    s.progress_sent = True
                    yield _default_note(turn, calls, into)
                due = _due(turn, started, told_long)
                timer = None if due is None else loop.call_later(
                    due - time.monotonic(), queue.put_nowait, _TICK)
                continue
            if event is _DONE:
                return
            if event["type"] == "tool_progress":
                if s.progress_sent:
                    continue
                s.progress_sent = True
            yield event
    finally:
        if timer is not None:
            timer.cancel()
