"""The agent loop: the model thinks, calls tools, reads their results, and answers.

`run_turn` is an async generator of events (the seed's types):
  {"type": "text", "text": ...}               text for the user (before tool calls, or the answer)
  {"type": "tool_start", "name", "tool_call_id", "arguments"}
  {"type": "tool_progress", "name", "note"}   a tool runs long (once per turn at most)
  {"type": "tool_end", "name", "tool_call_id", "status", "duration_ms"}
  {"type": "final", "outcome": TurnOutcome}   always last

Caps (bot.config.Limits): at most `max_iterations` model calls, the last one sent with
`tool_choice: "none"`; one deadline for the whole turn shared by the model and the tools, with a
reserve kept for the final answer (near the deadline the loop goes straight to the forced call);
each tool under min(tool timeout, time left before the reserve); at most
`max_tool_calls_per_response` calls run from one response. With a `Budget`, no model call is made
that would take the turn's tokens past what the user can pay for (the user is told), and each
call's tokens are reported as soon as it returns. The user always gets text.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.agent.effects import EffectStore
from bot.agent.executor import CallOutcome, TurnMemory, complete_outcomes, execute_calls
from bot.agent.llm import ImagesRefused, LLMClient, LLMError, LLMResponse
from bot.agent.sse import ToolCall, repair_ids
from bot.agent.toolspec import Tool, ToolContext
from bot.agent.truncation import fit_context, total_tokens
from bot.agent.untrusted import TurnSources
from bot.config import Limits

ANSWERED = "answered"
FORCED_MAX_ITERATIONS = "forced_max_iterations"
FORCED_DEADLINE = "forced_deadline"
PROVIDER_ERROR = "provider_error"
EMPTY_ANSWER = "empty_answer"
ABORTED = "aborted"
OVER_BUDGET = "over_budget"

FALLBACK_TEXT = {
    PROVIDER_ERROR: {
        "fr": "Désolé, je n'arrive pas à te répondre pour le moment (mon service est indisponible). "
        "Réessaie dans quelques minutes.",
        "en": "Sorry, I can't answer right now (my service is unavailable). "
        "Please try again in a few minutes.",
    },
    EMPTY_ANSWER: {
        "fr": "Désolé, je n'ai pas réussi à formuler une réponse. Peux-tu reformuler ta question ?",
        "en": "Sorry, I couldn't put an answer together. Could you rephrase your question?",
    },
    OVER_BUDGET: {
        "fr": "Je m'arrête ici : continuer coûterait plus que les crédits qu'il te reste. "
        "Envoie **ACHETER** pour en obtenir, ou **NOUVEAU** pour repartir d'une conversation "
        "plus courte, qui coûte moins.",
        "en": "I have to stop here: going on would cost more than the credits you have left. "
        "Send **BUY** to get more, or **NEW** to start a shorter conversation, which costs less.",
    },
}
# Tokens an answer is assumed to take when a model call's cost is estimated beforehand.
COMPLETION_ALLOWANCE = 512
_DONE: dict[str, Any] = {"type": "_done"}  # the executor finished (put on the event queue)
DEFAULT_PROGRESS = {"fr": "⏳ Je travaille dessus, un instant…", "en": "⏳ Working on it, one moment…"}


@dataclass
class TurnOutcome:
    exit_reason: str
    text: str  # everything the user was shown, joined
    iterations: list[dict[str, Any]] = field(default_factory=list)
    new_messages: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    tool_runs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def detail(self) -> dict[str, Any]:
        return {"iterations": self.iterations, "tools": self.tool_runs}


@dataclass
class Budget:
    """The most tokens a turn may use (None: no ceiling), and who is told what each call used."""

    tokens: int | None = None
    spend: Callable[[int], Awaitable[None]] | None = None


def _tools_tokens(schemas: Sequence[dict[str, Any]]) -> int:
    return int(len(json.dumps(list(schemas))) / 3.5) if schemas else 0


def _steps_left_note(left: int, language: str) -> dict[str, Any]:
    text = (
        f"Note: {left} step(s) left in this turn. Finish the work and answer the user soon."
        if language == "en"
        else f"Note : il reste {left} étape(s) dans ce tour. Termine et réponds à l'utilisateur bientôt."
    )
    return {"role": "system", "content": text}


def _progress_sender(queue: asyncio.Queue[dict[str, Any]], name: str) -> Callable[[str], Awaitable[None]]:
    async def progress(note: str) -> None:
        queue.put_nowait({"type": "tool_progress", "name": name, "note": note})

    return progress


async def run_turn(
    llm: LLMClient,
    messages: list[dict[str, Any]],
    *,
    tools: Sequence[Tool] = (),
    known_names: Collection[str] = (),
    mode: str = "child",
    language: str = "fr",
    make_context: Callable[[ToolCall], ToolContext] | None = None,
    limits: Limits | None = None,
    context_tokens: int = 32_000,
    turn_timeout_s: float | None = None,
    on_messages: Callable[[list[dict[str, Any]]], Awaitable[None]] | None = None,
    taken_ids: set[str] | None = None,
    redact_arguments: Callable[[str, str], str] | None = None,
    budget: Budget | None = None,
    effects: EffectStore | None = None,
    without_images: Callable[[list[dict[str, Any]]], Awaitable[list[dict[str, Any]]]] | None = None,
) -> AsyncIterator[dict[str, Any]]:
    """Runs one turn from `messages` (system prompt, history and the user's message).

    `redact_arguments(name, arguments)` rewrites a call's arguments as history keeps them, after
    the tool ran with the real ones (a quiz's answer must not travel again to the model).
    `effects` keys the side effects of tool calls so that a re-run of the turn does not repeat them.
    `without_images(messages)` gives the messages with their images replaced by text (OCR): used
    once, in the same turn, when the provider refuses image input.
    """
    limits = limits or Limits()
    lang = "en" if language == "en" else "fr"
    started = time.monotonic()
    deadline = started + (turn_timeout_s if turn_timeout_s is not None else limits.turn_timeout_s)
    reserve = min(limits.final_answer_reserve_s, (deadline - started) / 2)
    by_name = {t.name: t for t in tools}
    schemas = [t.openai_schema() for t in tools]
    tools_tokens = _tools_tokens(schemas)
    history = list(messages)
    taken = (
        taken_ids
        if taken_ids is not None
        else {c.get("id", "") for m in messages for c in (m.get("tool_calls") or [])}
    )
    memory = TurnMemory()
    # Where browse_url may go and whether third-party text was read: what save_memory looks at.
    sources = TurnSources.for_turn(messages)
    outcome = TurnOutcome(exit_reason=ANSWERED, text="")
    shown: list[str] = []
    progress_sent = False
    position = 0  # tool calls of this turn so far: the key of a side effect is its position

    def ctx_for(call: ToolCall) -> ToolContext:
        if make_context is None:
            raise RuntimeError("tools offered without a make_context")
        return make_context(call)

    def record(n: int, resp: LLMResponse | None, forced: bool, extra: dict[str, Any] | None = None) -> None:
        entry: dict[str, Any] = {"n": n, "forced": forced}
        if resp is not None:
            entry.update(
                model=resp.model,
                prompt_tokens=resp.prompt_tokens,
                completion_tokens=resp.completion_tokens,
                latency_ms=resp.latency_ms,
                usage_estimated=resp.usage_estimated,
                tool_calls=len(resp.tool_calls),
                attempts=len(resp.attempts),
            )
            outcome.prompt_tokens += resp.prompt_tokens
            outcome.completion_tokens += resp.completion_tokens
        entry.update(extra or {})
        outcome.iterations.append(entry)

    def say(text: str) -> dict[str, Any]:
        shown.append(text)
        return {"type": "text", "text": text}

    def affordable(request: list[dict[str, Any]], with_tools: bool) -> bool:
        if budget is None or budget.tokens is None:
            return True
        estimate = total_tokens(request, tools_tokens if with_tools else 0) + COMPLETION_ALLOWANCE
        return outcome.total_tokens + estimate <= budget.tokens

    async def spent(resp: LLMResponse) -> None:
        if budget is not None and budget.spend is not None:
            await budget.spend(resp.prompt_tokens + resp.completion_tokens)

    async def persist(new: list[dict[str, Any]]) -> None:
        outcome.new_messages.extend(new)
        if on_messages is not None:
            await on_messages(new)

    try:
        n = 0
        force_now = False
        while n < limits.max_iterations:
            n += 1
            remaining = deadline - time.monotonic()
            at_deadline = force_now or remaining <= reserve
            forced = n >= limits.max_iterations or at_deadline or not tools
            if forced and tools:
                outcome.exit_reason = FORCED_DEADLINE if at_deadline else FORCED_MAX_ITERATIONS
            request = history
            left = limits.max_iterations - n
            if tools and not forced and left <= 2:
                request = [*history, _steps_left_note(left + 1, lang)]
            request = fit_context(request, context_tokens, tools_tokens)
            if not affordable(request, bool(schemas)):
                record(n, None, forced, {"over_budget": True})
                outcome.exit_reason = OVER_BUDGET
                yield say(FALLBACK_TEXT[OVER_BUDGET][lang])
                break
            call_deadline = deadline if forced else deadline - reserve
            try:
                resp = await llm.chat(
                    request,
                    tools=schemas or None,
                    tool_choice="none" if (forced and schemas) else None,
                    deadline=call_deadline,
                )
            except LLMError as exc:
                record(n, None, forced, {"error": str(exc), "attempts": exc.attempts})
                if isinstance(exc, ImagesRefused) and without_images is not None:
                    history = await without_images(history)
                    without_images = None
                    n -= 1  # the same step again, with the photos' text instead of the photos
                    continue
                if not forced and time.monotonic() >= call_deadline - 0.05:
                    # The model call ran into the reserve: answer with what we have, now.
                    force_now = True
                    continue
                outcome.exit_reason = PROVIDER_ERROR
                yield say(FALLBACK_TEXT[PROVIDER_ERROR][lang])
                break
            record(n, resp, forced)
            await spent(resp)
            calls = resp.tool_calls
            if forced and calls:
                # Asked for text but got tool calls: drop them and ask once more without tools.
                if not resp.content.strip():
                    retry = fit_context(history, context_tokens)
                    if not affordable(retry, False):
                        outcome.exit_reason = OVER_BUDGET
                        yield say(FALLBACK_TEXT[OVER_BUDGET][lang])
                        break
                    try:
                        resp = await llm.chat(retry, deadline=deadline)
                        record(n, resp, True, {"retry_without_tools": True})
                        await spent(resp)
                    except LLMError as exc:
                        record(n, None, True, {"error": str(exc), "retry_without_tools": True})
                        outcome.exit_reason = PROVIDER_ERROR
                        yield say(FALLBACK_TEXT[PROVIDER_ERROR][lang])
                        break
                calls = []
            if not calls:
                text = resp.content.strip()
                if not text:
                    if outcome.exit_reason == ANSWERED:
                        outcome.exit_reason = EMPTY_ANSWER
                    text = FALLBACK_TEXT[EMPTY_ANSWER][lang]
                await persist([{"role": "assistant", "content": text}])
                yield say(text)
                break
            calls = repair_ids(calls, taken)
            if resp.content.strip():
                yield say(resp.content.strip())
            assistant = {
                "role": "assistant",
                "content": resp.content or None,
                "tool_calls": [c.as_openai() for c in calls],
            }
            tool_timeout = min(limits.tool_timeout_s, deadline - reserve - time.monotonic())
            queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
            into: list[CallOutcome | None] = [None] * len(calls)

            shown_images: list[dict[str, Any]] = []  # image parts tools asked the model to see

            def make(call: ToolCall, _queue: asyncio.Queue[dict[str, Any]] = queue,
                     _images: list[dict[str, Any]] = shown_images) -> ToolContext:
                ctx = ctx_for(call)
                ctx.extra["images"] = _images
                tool = by_name.get(call.name)

                if ctx.progress is None:
                    ctx.progress = _progress_sender(_queue, call.name)
                if ctx.turn is None:
                    ctx.turn = sources
                ctx.extra.setdefault("progress_default", (tool.progress_note or {}) if tool else {})
                return ctx

            task = asyncio.create_task(
                execute_calls(
                    calls,
                    tools=by_name,
                    known_names=known_names,
                    mode=mode,
                    make_context=make,
                    timeout_s=tool_timeout,
                    memory=memory,
                    emit=queue.put_nowait,
                    into=into,
                    max_calls=limits.max_tool_calls_per_response,
                    effects=effects,
                    first_position=position,
                )
            )
            position += len(calls)
            task.add_done_callback(lambda _task, _queue=queue: _queue.put_nowait(_DONE))
            batch_started = time.monotonic()
            try:
                while True:
                    if progress_sent:
                        event = await queue.get()
                    else:
                        try:
                            wait = batch_started + limits.progress_note_after_s - time.monotonic()
                            async with asyncio.timeout(max(0.0, wait)):
                                event = await queue.get()
                        except TimeoutError:
                            progress_sent = True
                            running = [c for c, o in zip(calls, into, strict=True) if o is None]
                            tool = by_name.get(running[0].name) if running else None
                            note = (tool.progress_note or {}) if tool else {}
                            yield {
                                "type": "tool_progress",
                                "name": tool.name if tool else "",
                                "note": note.get(lang) or note.get("fr") or DEFAULT_PROGRESS[lang],
                            }
                            continue
                    if event is _DONE:
                        break
                    if event["type"] == "tool_progress":
                        if progress_sent:
                            continue
                        progress_sent = True
                    yield event
                outcomes = task.result()
            finally:
                if not task.done():
                    task.cancel()
                    try:
                        await task
                    except BaseException:  # cancelled on purpose; its outcome is not needed
                        pass
            outcomes = complete_outcomes(calls, list(into))
            for o in outcomes:
                outcome.tool_runs.append(
                    {"n": n, "name": o.call.name, "status": o.status, "duration_ms": o.duration_ms}
                )
            if redact_arguments is not None:
                for o in outcomes:
                    o.call.arguments = redact_arguments(o.call.name, o.call.arguments)
            assistant["tool_calls"] = [o.call.as_openai() for o in outcomes]
            new = [assistant, *(o.message() for o in outcomes)]
            history.extend(new)
            await persist(new)
            if shown_images:
                # Seen in this turn only: history keeps the file reference, never the bytes.
                note = "[Images requested with read_user_file, in order:]"
                history.append({"role": "user", "content": [{"type": "text", "text": note}, *shown_images]})
    finally:
        outcome.text = "\n\n".join(shown)
        outcome.latency_ms = int((time.monotonic() - started) * 1000)
    yield {"type": "final", "outcome": outcome}
