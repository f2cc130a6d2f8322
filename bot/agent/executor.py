"""Runs the tool calls of one model response against the tools the loop was given.

Dispatch is by name; the core never imports a tool. Each call gets exactly one result, whatever
happens: unknown tool, tool not allowed in the user's mode, arguments that are not JSON (a cheap
repair is tried first) or do not fit the schema, a timeout, an exception. Calls run concurrently
unless a tool is `exclusive`; results come back in call order. A side-effect tool asked again with
the same arguments in the same turn is not run twice: the model gets the earlier result, marked.
Past `max_calls` calls in one response, the others are not run and their results say so. With an
`EffectStore`, each side-effect call is keyed by its position in the turn (bot.agent.effects): a re-run
of the turn gets the stored result instead of doing it again.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import jsonschema

from bot.agent.effects import DONE, Earlier, EffectStore
from bot.agent.events import ToolEnded, ToolEvent, ToolStarted
from bot.agent.sse import ToolCall
from bot.agent.toolspec import Tool, ToolContext, tool_error
from bot.agent.truncation import truncate_result

log = logging.getLogger(__name__)

EventSink = Callable[[ToolEvent], None]


@dataclass
class CallOutcome:
    call: ToolCall  # as stored in history: arguments are valid JSON ("{}" when they were not)
    result: dict[str, Any]
    # ok | error | invalid_args | unknown | not_allowed | timeout | duplicate | skipped | over_limit
    # | replayed (done by an earlier run of the turn) | interrupted (an earlier run was cut short in it)
    status: str
    duration_ms: int = 0

    def message(self) -> dict[str, Any]:
        return {
            "role": "tool",
            "tool_call_id": self.call.id,
            "content": json.dumps(self.result, ensure_ascii=False, default=str),
        }


@dataclass
class TurnMemory:
    """What the executor remembers across the iterations of one turn."""

    side_effect_results: dict[str, dict[str, Any]] = field(default_factory=dict)


_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")
_PREFIX = re.compile(r"^\s*(?:Calling tools?:|Arguments?:)\s*", re.IGNORECASE)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def parse_arguments(raw: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """(arguments, None) or (None, why not). Tries a cheap repair before giving up."""
    text = (raw or "").strip()
    if not text:
        return {}, None
    candidates = [text]
    repaired = _TRAILING_COMMA.sub(r"\1", _PREFIX.sub("", _FENCE.sub("", text)).strip())
    if repaired != text:
        candidates.append(repaired)
    if repaired.count("{") > repaired.count("}"):
        candidates.append(repaired + "}" * (repaired.count("{") - repaired.count("}")))
    error = ""
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError as exc:
            error = str(exc)
            continue
        if isinstance(value, str):  # double-encoded arguments
            try:
                value = json.loads(value)
            except ValueError:
                pass
        if isinstance(value, dict):
            return value, None
        error = f"arguments must be a JSON object, got {type(value).__name__}"
    return None, error


_VALIDATORS: dict[int, tuple[dict[str, Any], Any]] = {}


def _validator(schema: dict[str, Any]) -> Any:
    """A compiled validator per schema: checking the schema itself on every call costs milliseconds."""
    cached = _VALIDATORS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    _VALIDATORS[id(schema)] = (schema, validator)  # the schema is kept alive, so its id stays its own
    return validator


# Keywords a schema may use for the fast check; annotations change nothing (nor does `format`,
# which jsonschema only asserts when given a format checker, and the validator here has none).
_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "format", "$comment"})
_FAST_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "items",
                                 "enum", "maxLength", "minLength", "maxItems", "minItems"}
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    # Stricter than jsonschema (which takes 1.0 as an integer): a miss only means the slow path.
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_FAST: dict[int, tuple[dict[str, Any], Callable[[Any], bool] | None]] = {}


def _fast_check(schema: Any) -> Callable[[Any], bool] | None:
    """A plain-Python check of the schemas tools use, or None when the schema uses anything else.
    It may answer False for valid arguments (jsonschema then decides), never True for invalid ones:
    running jsonschema on every call cost tens of µs, seen when hundreds of answers arrive at once."""
    if not isinstance(schema, dict) or not set(schema) <= _FAST_KEYWORDS:
        return None
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else None
    if kind is not None and (kinds is None or not all(k in _TYPES for k in kinds)):
        return None
    checks: list[Callable[[Any], bool]] = []
    if kinds is not None:
        tests = [_TYPES[k] for k in kinds]
        checks.append(tests[0] if len(tests) == 1 else lambda v: any(t(v) for t in tests))
    if {"properties", "additionalProperties", "required"} & set(schema):
        check = _fast_object(schema)
        if check is None:
            return None
        checks.append(check)
    for key in ("items", "enum", "maxLength", "minLength", "maxItems", "minItems"):
        if key in schema:
            check = _fast_keyword(key, schema[key])
            if check is None:
                return None
            checks.append(check)
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)
    return lambda v: all(check(v) for check in checks)


def _fast_object(schema: dict[str, Any]) -> Callable[[Any], bool] | None:
    """`properties`, `required` and `additionalProperties` in one pass (only dicts are checked)."""
    props = schema.get("properties") or {}
    required = schema.get("required") or []
    extra = schema.get("additionalProperties", True)
    if not isinstance(props, dict) or not isinstance(required, list) or extra not in (True, False):
        return None
    if not all(isinstance(n, str) for n in required):
        return None
    subs = {name: _fast_check(sub) for name, sub in props.items()}
    if any(sub is None for sub in subs.values()):
        return None
    closed = extra is False

    def check(v: Any) -> bool:
        if not isinstance(v, dict):
            return True
        for name in required:
            if name not in v:
                return False
        for name, value in v.items():
            sub = subs.get(name)
            if sub is None:
                if closed:
                    return False
            elif not sub(value):
                return False
        return True

    return check


def _fast_keyword(key: str, value: Any) -> Callable[[Any], bool] | None:
    """The check of one keyword (applying, as in JSON Schema, only to the instances it is about)."""
    if key == "items":
        sub = _fast_check(value)
        return None if sub is None else (lambda v: not isinstance(v, list) or all(sub(i) for i in v))
    if key == "enum":
        if not isinstance(value, list) or not all(isinstance(e, str) for e in value):
            return None
        allowed = frozenset(value)
        return lambda v: isinstance(v, str) and v in allowed
    if isinstance(value, bool) or not isinstance(value, int):  # maxLength, minLength, maxItems, minItems
        return None
    kind, most = (str if key.endswith("Length") else list), key.startswith("max")
    return lambda v: not isinstance(v, kind) or (len(v) <= value if most else len(v) >= value)


def _fast_valid(schema: dict[str, Any], args: dict[str, Any]) -> bool:
    cached = _FAST.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = (schema, _fast_check(schema))
        _FAST[id(schema)] = cached  # the schema is kept alive, so its id stays its own
    return cached[1] is not None and cached[1](args)


def _schema_error(tool: Tool, args: dict[str, Any]) -> str | None:
    try:
        validator = _validator(tool.parameters)
    except jsonschema.SchemaError as exc:  # a tool's own schema is broken: say so, do not crash
        return f"the tool's schema is invalid: {exc.message}"
    if _fast_valid(tool.parameters, args):
        return None
    error = jsonschema.exceptions.best_match(validator.iter_errors(args))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    return f"{where}: {error.message}"


def _key(name: str, args: dict[str, Any]) -> str:
    return name + ":" + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


async def execute_calls(
    calls: list[ToolCall],
    *,
    tools: Mapping[str, Tool],
    known_names: Collection[str] = (),
    mode: str,
    make_context: Callable[[ToolCall], ToolContext],
    timeout_s: float,
    memory: TurnMemory,
    emit: EventSink | None = None,
    into: list[CallOutcome | None] | None = None,
    max_calls: int | None = None,
    effects: EffectStore | None = None,
    first_position: int = 0,
) -> list[CallOutcome]:
    """Runs the calls; returns one outcome per call, in the order of `calls`.

    `into` (one None per call) is filled as outcomes arrive, so that a caller that aborts the run
    keeps the results already obtained and completes the others with `complete_outcomes`.
    `first_position` is the position in the turn of the first of these calls (for `effects`).
    """
    emit = emit or (lambda _event: None)
    outcomes: list[CallOutcome | None] = into if into is not None else [None] * len(calls)
    runnable, duplicates = _triage(calls, outcomes, tools, known_names, mode, memory, max_calls)

    async def run_one(i: int, tool: Tool, args: dict[str, Any], call: ToolCall) -> None:
        if effects is not None and tool.side_effects:
            outcome = await _run_keyed(effects, effects.key(first_position + i, tool.name),
                                       tool, args, call, make_context, timeout_s, emit)
        else:
            outcome = await _run_tool(tool, args, call, make_context(call), timeout_s, emit)
        outcomes[i] = outcome
        if tool.side_effects:
            memory.side_effect_results[_key(tool.name, args)] = outcome.result

    await _run_in_order(runnable, run_one)
    for i, first, stored in duplicates:
        original = outcomes[first]
        if original is not None:
            outcomes[i] = _duplicate(stored, original.result)
    return [o if o is not None else _missing(calls[i]) for i, o in enumerate(outcomes)]


def _triage(
    calls: list[ToolCall],
    outcomes: list[CallOutcome | None],
    tools: Mapping[str, Tool],
    known_names: Collection[str],
    mode: str,
    memory: TurnMemory,
    max_calls: int | None,
) -> tuple[list[tuple[int, Tool, dict[str, Any], ToolCall]], list[tuple[int, int, ToolCall]]]:
    """Decides what becomes of each call: answered now (into `outcomes`), run, or answered from an
    identical side-effect call earlier in this response. Returns (runnable, duplicates)."""
    runnable: list[tuple[int, Tool, dict[str, Any], ToolCall]] = []
    first_of: dict[str, int] = {}
    duplicates: list[tuple[int, int, ToolCall]] = []
    for i, call in enumerate(calls):
        args, parse_error = parse_arguments(call.arguments)
        stored = replace(call, arguments=json.dumps(args, ensure_ascii=False) if args is not None else "{}")
        if max_calls is not None and i >= max_calls:
            outcomes[i] = _over_limit(stored, max_calls, len(calls))
            continue
        tool = tools.get(call.name)
        refusal = _refusal(call, stored, tool, args, parse_error, tools, known_names, mode)
        if refusal is not None:
            outcomes[i] = refusal
            continue
        assert tool is not None and args is not None
        if tool.side_effects:
            key = _key(tool.name, args)
            earlier = memory.side_effect_results.get(key)
            if earlier is not None:
                outcomes[i] = _duplicate(stored, earlier)
                continue
            if key in first_of:  # the same call twice in this response: answered from the first
                duplicates.append((i, first_of[key], stored))
                continue
            first_of[key] = i
        runnable.append((i, tool, args, stored))
    return runnable, duplicates


def _refusal(
    call: ToolCall,
    stored: ToolCall,
    tool: Tool | None,
    args: dict[str, Any] | None,
    parse_error: str | None,
    tools: Mapping[str, Tool],
    known_names: Collection[str],
    mode: str,
) -> CallOutcome | None:
    """Why a call cannot run (unknown tool, not in this mode, bad arguments), or None if it can."""
    if tool is None and call.name in known_names:
        return CallOutcome(
            stored,
            tool_error(
                f"the tool '{call.name}' is not available in {mode} mode; do without it",
                code="not_allowed",
            ),
            "not_allowed",
        )
    if tool is None:
        available = ", ".join(sorted(tools)) or "none"
        return CallOutcome(
            stored,
            tool_error(f"unknown tool '{call.name}'; available tools: {available}", code="unknown_tool"),
            "unknown",
        )
    if args is None:
        return CallOutcome(
            stored,
            tool_error(
                f"the arguments are not valid JSON ({parse_error}); "
                "call the tool again with a valid JSON object",
                code="invalid_json",
            ),
            "invalid_args",
        )
    problem = _schema_error(tool, args)
    if problem:
        return CallOutcome(
            stored,
            tool_error(f"the arguments do not fit the tool's schema: {problem}", code="invalid_arguments"),
            "invalid_args",
        )
    return None


async def _run_in_order(
    runnable: list[tuple[int, Tool, dict[str, Any], ToolCall]],
    run_one: Callable[[int, Tool, dict[str, Any], ToolCall], Awaitable[None]],
) -> None:
    """Runs the calls concurrently, but an `exclusive` one waits for those before it and runs alone."""
    batch: list[Awaitable[None]] = []
    try:
        for i, tool, args, call in runnable:
            if tool.exclusive:
                if batch:
                    await asyncio.gather(*batch)
                    batch = []
                await run_one(i, tool, args, call)
            else:
                batch.append(run_one(i, tool, args, call))
        if len(batch) == 1:
            await batch.pop()
        elif batch:
            await asyncio.gather(*batch)
    finally:
        for coro in batch:  # never started when an earlier exclusive call was cancelled
            if inspect.iscoroutine(coro) and inspect.getcoroutinestate(coro) == inspect.CORO_CREATED:
                coro.close()


def _duplicate(stored: ToolCall, earlier: dict[str, Any]) -> CallOutcome:
    return CallOutcome(
        stored,
        {
            **earlier,
            "note": "already done earlier in this turn with the same arguments; not run again",
        },
        "duplicate",
    )


async def _run_keyed(
    effects: EffectStore, key: str, tool: Tool, args: dict[str, Any], call: ToolCall,
    make_context: Callable[[ToolCall], ToolContext], timeout_s: float, emit: EventSink,
) -> CallOutcome:
    """Runs a side-effect call once per key: claimed before, its result stored after."""
    try:
        earlier = await effects.claim(key, tool.name)
    except Exception:
        log.exception("could not record a tool call before running it", extra={"effect_key": key})
        return CallOutcome(call, tool_error(
            "the tool was not run: the bot could not record it safely; try again later",
            code="not_recorded"), "error")
    if earlier is not None and not (earlier.status != DONE and tool.effect_in_transaction):
        return _from_earlier(call, earlier)
    # New, or cut short in a tool that stores its key with its effect: nothing was done, run it.
    ctx = make_context(call)
    ctx.effect_key = key
    outcome = await _run_tool(tool, args, call, ctx, timeout_s, emit)
    await effects.finish(key, outcome.result)
    return outcome


def _over_limit(stored: ToolCall, limit: int, total: int) -> CallOutcome:
    return CallOutcome(
        stored,
        tool_error(
            f"not run: at most {limit} tool calls from one response are run, and this response had "
            f"{total}. Ask for this call again in your next step if it is still needed.",
            code="too_many_calls",
        ),
        "over_limit",
    )


def _from_earlier(call: ToolCall, earlier: Earlier) -> CallOutcome:
    """The outcome of a call an earlier run of this turn already made (see bot.agent.effects)."""
    if earlier.status == DONE and earlier.result is not None:
        note = ("already done when this message was handled before an interruption; not done again "
                "(this is the result from then)")
        return CallOutcome(call, {**earlier.result, "note": note}, "replayed")
    return CallOutcome(
        call,
        tool_error(
            "not run again: this action was started before an interruption and may already have been "
            "done. It is not repeated, so that it is not done twice; tell the user, who can ask again "
            "if it is missing.",
            code="interrupted",
        ),
        "interrupted",
    )


def _missing(call: ToolCall) -> CallOutcome:
    args, _ = parse_arguments(call.arguments)
    stored = replace(call, arguments=json.dumps(args, ensure_ascii=False) if args is not None else "{}")
    return CallOutcome(
        stored, tool_error("the tool was not run: the turn was stopped", code="aborted"), "skipped"
    )


def complete_outcomes(calls: list[ToolCall], outcomes: list[CallOutcome | None]) -> list[CallOutcome]:
    """Fills the calls that got no outcome (an abort) so that every call has exactly one result."""
    return [o if o is not None else _missing(c) for c, o in zip(calls, outcomes, strict=True)]


async def _run_tool(
    tool: Tool, args: dict[str, Any], call: ToolCall, ctx: ToolContext, timeout_s: float, emit: EventSink
) -> CallOutcome:
    started = time.monotonic()
    emit(ToolStarted(tool.name, call.id, args))
    status = "ok"
    try:
        if timeout_s <= 0:
            raise TimeoutError
        if tool.untrusted_source and ctx.turn is not None:
            ctx.turn.note_read(tool.name)  # before it runs: what it returns is in the turn, even an error
        async with asyncio.timeout(timeout_s):
            raw = await tool.run(ctx, args)
        result = truncate_result(tool.name, raw if raw is not None else {"success": True},
                                 tool.untrusted_source)
        if isinstance(result, dict) and result.get("success") is False:
            status = "error"
    except TimeoutError:
        status = "timeout"
        result = tool_error(
            f"the tool did not finish within {timeout_s:.0f} s and was stopped; tell the user, or try "
            "something simpler",
            code="timeout",
        )
    except asyncio.CancelledError:
        emit(ToolEnded(tool.name, call.id, "cancelled", int((time.monotonic() - started) * 1000)))
        raise
    except Exception as exc:
        log.exception("tool %s failed", tool.name)
        status = "error"
        result = tool_error(f"the tool failed: {type(exc).__name__}: {str(exc)[:500]}", code="exception")
    duration_ms = int((time.monotonic() - started) * 1000)
    emit(ToolEnded(tool.name, call.id, status, duration_ms))
    return CallOutcome(call, result, status, duration_ms)
