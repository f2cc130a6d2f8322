"""The agent loop: the model thinks, calls tools, reads their results, and answers.

`run_turn(llm, state, setup, side)` is an async generator of typed events (bot/agent/events.py),
`Final` always last. `state` is the turn as data (`TurnState`, bot/agent/turn_state.py), advanced
one step at a time by `_Turn.step`; `setup` (`TurnSetup`) is what the turn runs with: the tools,
the caps, the budget; `side` (`LoopSide`) is the caller's part, where the turn's messages are kept,
its text streamed, its state saved. `side.save(state)` is called after every step, so a turn can be
resumed from its last step by another process. With `setup.promote_at`, a turn still working when
that time passes stops before its next step with exit reason `promoted` instead of being forced to
answer: the caller carries it on in the background. `side.should_stop()` is asked before every
step (ANNULER).

Caps (bot.config.Limits): at most `max_iterations` model calls, the last one sent with
`tool_choice: "none"`; one deadline for the whole turn shared by the model and the tools, with a
reserve kept for the final answer (near the deadline the loop goes straight to the forced call);
each tool under min(tool timeout, time left before the reserve); at most
`max_tool_calls_per_response` calls run from one response. With a `Budget`, no model call is made
that would take the turn's tokens past what the user can pay for (the user is told), each call
asks for no more output (`max_tokens`) than the budget leaves after its prompt, and each call's
tokens are reported as soon as it returns. The user always gets text.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.agent.effects import EffectStore
from bot.agent.events import (
    ExitReason,
    Final,
    LongWork,
    LoopEvent,
    Promote,
    StepStarted,
    Text,
    ToolEvent,
    TurnOutcome,
)
from bot.agent.executor import CallOutcome
from bot.agent.llm import ImagesRefused, LLMClient, LLMError, LLMResponse
from bot.agent.sse import ToolCall, repair_ids
from bot.agent.tool_batch import run_batch
from bot.agent.toolspec import Tool, ToolContext
from bot.agent.truncation import fit_context, total_tokens
from bot.agent.turn_setup import Budget, LoopSide, Message, QuietSide, TurnSetup
from bot.agent.turn_state import TurnState, new_state
from bot.config import Limits
from bot.texts import fr_en

# The exit reasons under the names callers have used; ExitReason is the type.
ANSWERED = ExitReason.ANSWERED
FORCED_MAX_ITERATIONS = ExitReason.FORCED_MAX_ITERATIONS
FORCED_DEADLINE = ExitReason.FORCED_DEADLINE
PROVIDER_ERROR = ExitReason.PROVIDER_ERROR
EMPTY_ANSWER = ExitReason.EMPTY_ANSWER
ABORTED = ExitReason.ABORTED
OVER_BUDGET = ExitReason.OVER_BUDGET
PROMOTED = ExitReason.PROMOTED
CANCELLED = ExitReason.CANCELLED

__all__ = [
    "ANSWERED", "Budget", "ExitReason", "LoopSide", "QuietSide", "TurnOutcome", "TurnSetup", "TurnState",
    "new_state", "run_turn",
]

FALLBACK_TEXT: dict[str, dict[str, str]] = {
    PROVIDER_ERROR: {
        "fr": "Désolé, je ne peux pas répondre pour le moment (mon service est indisponible). "
        "Merci de réessayer dans quelques minutes.",
        "en": "Sorry, I can't answer right now (my service is unavailable). "
        "Please try again in a few minutes.",
    },
    EMPTY_ANSWER: {
        "fr": "Désolé, je n'ai pas réussi à formuler une réponse. Merci de reformuler la question.",
        "en": "Sorry, I couldn't put an answer together. Could you rephrase your question?",
    },
    OVER_BUDGET: {
        "fr": "Je m'arrête ici : continuer coûterait plus que les crédits qui restent. "
        "**ACHETER** pour en obtenir, ou **NOUVEAU** pour repartir d'une conversation "
        "plus courte, qui coûte moins.",
        "en": "I have to stop here: going on would cost more than the credits you have left. "
        "Send **BUY** to get more, or **NEW** to start a shorter conversation, which costs less.",
    },
}
# Tokens an answer is assumed to take when a model call's cost is estimated beforehand.
COMPLETION_ALLOWANCE = 512


def _tools_tokens(schemas: Sequence[dict[str, Any]]) -> int:
    import json

    return int(len(json.dumps(list(schemas))) / 3.5) if schemas else 0


def _monotonic(wall: float) -> float:
    """A wall-clock deadline as the time.monotonic() value the model client expects."""
    return time.monotonic() + (wall - time.time())


def _cut(resp: LLMResponse) -> bool:
    """The stream broke off after some text (the client returns what came, marked so)."""
    return any(isinstance(e, dict) and str(e.get("message", "")).startswith("stream interrupted")
               for e in resp.errors)


def _thought_only(resp: LLMResponse) -> bool:
    """The model only thought (a think block, reasoning fields): nothing to show, nothing to run."""
    return not resp.tool_calls and not resp.content.strip() and bool(resp.reasoning.strip())


def _steps_left_note(left: int, language: str) -> dict[str, Any]:
    text = fr_en(language,
                 f"Note : il reste {left} étape(s) dans ce tour. Termine et réponds à l'utilisateur bientôt.",
                 f"Note: {left} step(s) left in this turn. Finish the work and answer the user soon.")
    return {"role": "system", "content": text}


@dataclass
class _Turn:
    """A turn as it runs: its state, and the code it runs with (the model, the setup, the side)."""

    llm: LLMClient
    state: TurnState
    setup: TurnSetup
    side: LoopSide
    shown_now: list[str] = field(default_factory=list)
    held: list[Message] = field(default_factory=list)  # a tool step's messages not handed over yet
    outcome: TurnOutcome = field(default_factory=lambda: TurnOutcome(exit_reason=ANSWERED, text=""))

    def __post_init__(self) -> None:
        self.tools = self.setup.tools
        self.schemas = [t.openai_schema() for t in self.tools]
        self.tools_tokens = _tools_tokens(self.schemas)
        self._by_name = {t.name: t for t in self.tools}
        self.lang = fr_en(self.setup.language, "fr", "en")
        self.run_started = time.time()

    # --- what the step's batch reads (bot.agent.tool_batch.BatchHost) -------------------------
    @property
    def limits(self) -> Limits:
        return self.setup.limits

    @property
    def by_name(self) -> Mapping[str, Tool]:
        return self._by_name

    @property
    def known_names(self) -> Collection[str]:
        return self.setup.known_names

    @property
    def mode(self) -> str:
        return self.setup.mode

    @property
    def effects(self) -> EffectStore | None:
        return self.setup.effects

    @property
    def promote_at(self) -> float | None:
        return self.setup.promote_at

    def make_context(self, call: ToolCall) -> ToolContext:
        return self.side.make_context(call)

    # --- small pieces ----------------------------------------------------------------------
    @property
    def reserve(self) -> float:
        s = self.state
        return min(self.limits.final_answer_reserve_s, (s.deadline - s.started) / 2)

    def promote_due(self) -> bool:
        """The direct budget has passed and the turn still has work to do."""
        return self.promote_at is not None and bool(self.tools) and time.time() >= self.promote_at

    @property
    def budget(self) -> Budget | None:
        return self.setup.budget

    def fallback(self, reason: str) -> str:
        """What the user is told when the turn ends for `reason` (the budget may say why it ran out)."""
        if reason == OVER_BUDGET and self.budget is not None and self.budget.notice:
            return self.budget.notice.get(self.lang) or self.budget.notice["fr"]
        return FALLBACK_TEXT[reason][self.lang]

    def say(self, text: str) -> Text:
        self.state.shown.append(text)
        self.shown_now.append(text)
        return Text(text)

    def record(self, n: int, resp: LLMResponse | None, forced: bool,
               extra: dict[str, Any] | None = None) -> None:
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
                cached_tokens=resp.cached_tokens,
            )
            self.state.prompt_tokens += resp.prompt_tokens
            self.state.completion_tokens += resp.completion_tokens
        entry.update(extra or {})
        self.state.iterations.append(entry)
        self.outcome.iterations.append(entry)

    def _left(self, request: list[dict[str, Any]], with_tools: bool) -> int | None:
        """Tokens the budget leaves after the request's estimated prompt (None: no ceiling)."""
        if self.budget is None or self.budget.tokens is None:
            return None
        prompt = total_tokens(request, self.tools_tokens if with_tools else 0)
        return self.budget.tokens - self.state.charged_tokens - prompt

    def affordable(self, request: list[dict[str, Any]], with_tools: bool) -> bool:
        left = self._left(request, with_tools)
        return left is None or left >= COMPLETION_ALLOWANCE

    def room(self, request: list[dict[str, Any]], with_tools: bool) -> int | None:
        """The call's `max_tokens` as the budget has it: what is left after the prompt, at least
        COMPLETION_ALLOWANCE (a call is only made when that much is left); None without a ceiling,
        and the client sends LLM_MAX_TOKENS."""
        left = self._left(request, with_tools)
        return None if left is None else max(COMPLETION_ALLOWANCE, left)

    async def spent(self, resp: LLMResponse) -> None:
        """Counts the call: its cached prompt tokens at CACHED_TOKENS_FACTOR, the rest in full."""
        s = self.state
        s.model_calls += 1
        cached = min(resp.cached_tokens, resp.prompt_tokens)
        charged = resp.prompt_tokens - cached + round(cached * self.limits.cached_tokens_factor)
        charged += resp.completion_tokens
        s.cached_tokens += cached
        s.charged_tokens += charged
        if self.budget is not None and self.budget.spend is not None:
            await self.budget.spend(charged)

    async def settle(self) -> None:
        """Makes the calls' charges durable (`Budget.settle`): before tools, another call, the end."""
        if self.budget is not None and self.budget.settle is not None:
            await self.budget.settle()

    async def persist(self, new: list[Message], *, tool_step: bool = False) -> None:
        """Hands the step's messages to the side; with `hold_tool_messages`, a tool step's wait for
        the next ones (`release`)."""
        self.outcome.new_messages.extend(new)
        self.held.extend(new)
        if not (tool_step and self.setup.hold_tool_messages):
            await self.release()

    async def release(self) -> None:
        """Hands the messages held back to the side (before tools run, but those that only read in
        the turn's session; with the answer; at the end)."""
        if self.held:
            held, self.held = self.held, []
            await self.side.on_messages(held)

    def lends(self, calls: list[ToolCall]) -> bool:
        """Whether the step's calls run in the turn's session: all are `reads_only` (or not run at
        all: unknown, not allowed) and the caller lent it. Nothing is then saved or settled before
        them: they neither write nor send, and no key of theirs follows the saved calls."""
        if self.setup.session is None:
            return False
        return all(getattr(self._by_name.get(c.name), "reads_only", True) for c in calls)

    def finish(self, reason: ExitReason | None = None) -> None:
        if reason is not None:
            self.state.exit_reason = reason
        self.state.done = True

    # --- one step --------------------------------------------------------------------------
    def _plan(self, n: int) -> tuple[bool, list[dict[str, Any]]]:
        """Whether this step is forced to text, and the request it sends."""
        s, limits = self.state, self.limits
        at_deadline = s.force_now or s.deadline - time.time() <= self.reserve
        forced = n >= limits.max_iterations or at_deadline or not self.tools
        if forced and self.tools:
            s.exit_reason = FORCED_DEADLINE if at_deadline else FORCED_MAX_ITERATIONS
        request = s.messages
        left = limits.max_iterations - n
        if self.tools and not forced and left <= 2:
            request = [*s.messages, _steps_left_note(left + 1, self.lang)]
        return forced, fit_context(request, self.setup.context_tokens, self.tools_tokens)

    async def step(self) -> AsyncIterator[Text | ToolEvent | LongWork]:
        s = self.state
        s.iteration += 1
        n = s.iteration
        forced, request = self._plan(n)
        if not self.affordable(request, bool(self.schemas)):
            self.record(n, None, forced, {"over_budget": True})
            self.finish(OVER_BUDGET)
            yield self.say(self.fallback(OVER_BUDGET))
            return
        resp = await self._call(n, request, forced)
        if resp is None:
            if s.done:
                yield self.say(self.fallback(s.exit_reason))
            return
        calls = resp.tool_calls
        if (forced and calls) or _thought_only(resp):
            resp = await self._text_instead(n, resp)
            if resp is None:
                yield self.say(self.fallback(s.exit_reason))
                return
            calls = []
        if not calls:
            yield await self._answer(resp)
            return
        async for event in self._tools(n, resp, calls):
            yield event

    async def _call(self, n: int, request: list[dict[str, Any]], forced: bool) -> LLMResponse | None:
        """The step's model call; None when it failed (the state says what comes next)."""
        s = self.state
        await self.settle()
        call_deadline = s.deadline if forced else s.deadline - self.reserve
        try:
            resp = await self._chat(request, forced, call_deadline)
        except LLMError as exc:
            self.record(n, None, forced, {"error": str(exc), "attempts": exc.attempts})
            replaced = (await self.side.without_images(s.messages)
                        if isinstance(exc, ImagesRefused) and not s.images_replaced else None)
            if replaced is not None:
                s.messages = replaced
                s.images_replaced = True
                s.iteration -= 1  # the same step again, with the photos' text instead of the photos
            elif not forced and time.time() >= call_deadline - 0.05:
                s.force_now = True  # the model call ran into the reserve: answer with what we have
            else:
                self.finish(PROVIDER_ERROR)
            return None
        self.record(n, resp, forced)
        await self.spent(resp)
        return resp

    async def _chat(self, request: list[dict[str, Any]], forced: bool, call_deadline: float) -> LLMResponse:
        """The model call, its text streamed to the side's `on_text`. The client no longer retries a
        stream cut once text reached us; when `on_text` had shown none of it (returned nothing true),
        the call is tried once more without streaming, as it would have been without streaming."""
        streams, shown = self.side.streams, [False]

        def on_text(chunk: str) -> None:
            if self.side.on_text(chunk):
                shown[0] = True

        ask: dict[str, Any] = {"tools": self.schemas or None, "deadline": _monotonic(call_deadline),
                               "tool_choice": "none" if (forced and self.schemas) else None,
                               "cache_key": self.setup.cache_key,
                               "max_tokens": self.room(request, bool(self.schemas))}
        resp = await self.llm.chat(request, on_text=on_text if streams else None, **ask)
        if streams and not shown[0] and _cut(resp):
            resp = await self.llm.chat(request, **ask)
        return resp

    async def _text_instead(self, n: int, resp: LLMResponse) -> LLMResponse | None:
        """Asked for text but got tool calls, or got thinking only: drop the calls; without text, ask
        once more without tools (still nothing: the usual apology)."""
        if resp.content.strip():
            return resp
        await self.settle()
        retry = fit_context(self.state.messages, self.setup.context_tokens)
        if not self.affordable(retry, False):
            self.finish(OVER_BUDGET)
            return None
        try:
            resp = await self.llm.chat(retry, deadline=_monotonic(self.state.deadline),
                                       cache_key=self.setup.cache_key, max_tokens=self.room(retry, False))
        except LLMError as exc:
            self.record(n, None, True, {"error": str(exc), "retry_without_tools": True})
            self.finish(PROVIDER_ERROR)
            return None
        self.record(n, resp, True, {"retry_without_tools": True})
        await self.spent(resp)
        return resp

    async def _answer(self, resp: LLMResponse) -> Text:
        text = resp.content.strip()
        if not text:
            if self.state.exit_reason == ANSWERED:
                self.state.exit_reason = EMPTY_ANSWER
            text = FALLBACK_TEXT[EMPTY_ANSWER][self.lang]
        await self.persist([{"role": "assistant", "content": text}])
        self.finish()
        return self.say(text)

    async def _tools(self, n: int, resp: LLMResponse,
                     calls: list[ToolCall]) -> AsyncIterator[Text | ToolEvent | LongWork]:
        s = self.state
        lent = self.lends(calls)
        if not lent:
            # The earlier step's calls are saved before these run: a re-run's keys follow them
            # (bot.agent.effects). Tools write in sessions of their own (SQLite has one writer).
            await self.release()
            await self.settle()
        taken = set(s.taken_ids)
        calls = repair_ids(calls, taken)
        s.taken_ids = sorted(taken)
        if resp.content.strip():
            yield self.say(resp.content.strip())
        assistant = {"role": "assistant", "content": resp.content if resp.content.strip() else None,
                     "tool_calls": [c.as_openai() for c in calls]}
        images: list[dict[str, Any]] = []  # image parts tools asked the model to see
        outcomes: list[CallOutcome] = []
        async for event in run_batch(self, n, calls, images, outcomes, self.setup.session if lent else None):
            yield event
        for o in outcomes:
            s.tool_runs.append({"n": n, "name": o.call.name, "status": o.status,
                                "duration_ms": o.duration_ms})
            self.outcome.tool_runs.append(s.tool_runs[-1])
        redact = self.setup.redact_arguments
        if redact is not None:
            for o in outcomes:
                o.call.arguments = redact(o.call.name, o.call.arguments)
        assistant["tool_calls"] = [o.call.as_openai() for o in outcomes]
        new = [assistant, *(o.message() for o in outcomes)]
        s.messages.extend(new)
        await self.persist(new, tool_step=True)
        if images:
            # Seen in this turn only: history keeps the file reference, never the bytes.
            note = "[Images requested with read_user_file, in order:]"
            s.messages.append({"role": "user", "content": [{"type": "text", "text": note}, *images]})

    def result(self, exit_reason: str) -> TurnOutcome:
        o, s = self.outcome, self.state
        o.exit_reason = ExitReason(exit_reason)
        o.text = "\n\n".join(self.shown_now)
        o.prompt_tokens = sum(i.get("prompt_tokens", 0) for i in o.iterations)
        o.completion_tokens = sum(i.get("completion_tokens", 0) for i in o.iterations)
        o.latency_ms = int((time.time() - self.run_started) * 1000)
        o.state = s
        return o


async def run_turn(llm: LLMClient, state: TurnState, setup: TurnSetup | None = None,
                   side: LoopSide | None = None) -> AsyncIterator[LoopEvent]:
    """Runs one turn from `state` (a new one from `new_state`, or one saved after a step) to its
    end or to its promotion; `Final` is always the last event."""
    setup = setup or TurnSetup()
    turn = _Turn(llm=llm, state=state, setup=setup, side=side or QuietSide())
    side, limits = turn.side, setup.limits
    exit_reason: ExitReason | None = None
    try:
        while not state.done:
            if await side.should_stop():
                exit_reason = CANCELLED
                break
            if turn.promote_due():
                exit_reason = PROMOTED
                await turn.release()
                yield Promote()
                break
            yield StepStarted(state.iteration + 1)
            async for event in turn.step():
                yield event
            if not state.done and state.iteration >= limits.max_iterations:
                turn.finish(FORCED_MAX_ITERATIONS)  # a forced step always answers; this is a guard
            await side.save(state)
        await turn.release()
        if setup.settle_at_end:
            await turn.settle()
    finally:
        outcome = turn.result(exit_reason or state.exit_reason)
    yield Final(outcome)
