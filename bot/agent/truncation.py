"""Keeps tool output from crowding the conversation out of the model's context.

`truncate_result` is applied by the executor to every tool result, at the product's limits:
browse_url 8,000 characters of content, web_search 5 results of 1,500, bash_execute 4,000 of stdout
(head and tail: errors are at the end), read_user_file 8,000. Other tools get a generic cap. Every
cut leaves a visible marker saying how much was cut, so the model knows the text is partial.
For a tool whose result carries third-party text (`Tool.untrusted_source`), that text is then put
in an envelope marking it as data (bot.agent.untrusted); every later cut keeps envelopes closed.

`fit_context` applies the whole-context budget (LLM_CONTEXT_TOKENS) before each model call: the
oldest tool results shrink first, then the oldest exchanges go, a tool call always together with
its results; the system prompt and the latest user message always stay.
"""

from __future__ import annotations

import json
from typing import Any

from bot.agent import untrusted

MAX_BROWSE = 8_000
MAX_SEARCH_RESULTS = 5
MAX_SEARCH_ITEM = 1_500
MAX_BASH = 4_000
MAX_FILE = 8_000
# Any other string field of any other tool: enough for a document summary, not for a dump.
MAX_GENERIC_FIELD = 8_000
MAX_GENERIC_TOTAL = 16_000
# String fields of a result that hold third-party text (at any depth: search results are a list).
UNTRUSTED_FIELDS = frozenset({"title", "content", "snippet", "raw_content", "text", "result"})
# What an old tool result shrinks to when the context budget is tight.
SHRUNK_RESULT = 600


def marker(shown: int, total: int) -> str:
    return f"[truncated: showing {shown:,} of {total:,} characters]"


def cut_head(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return untrusted.close_envelopes(text[:limit]) + "\n" + marker(limit, len(text))


def cut_head_tail(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 3 // 5
    tail = limit - head
    return f"{text[:head]}\n{marker(limit, len(text))} (start and end kept)\n{text[-tail:]}"


def truncate_result(name: str, result: Any, untrusted_source: str = "") -> Any:
    """The result as the model will see it. Never modifies the caller's object.

    `untrusted_source` (e.g. "web page") says the result carries third-party text: it is wrapped."""
    if not isinstance(result, dict):
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
        capped = {"result": cut_head(text, MAX_GENERIC_TOTAL)}
        return _generic_cap(mark_untrusted(capped, untrusted_source)) if untrusted_source else capped
    return _generic_cap(mark_untrusted(_per_tool(name, dict(result)), untrusted_source))


def _per_tool(name: str, result: dict[str, Any]) -> dict[str, Any]:
    if name == "browse_url" and isinstance(result.get("content"), str):
        result["content"] = cut_head(result["content"], MAX_BROWSE)
    elif name == "web_search" and isinstance(result.get("results"), list):
        items = result["results"]
        kept = []
        for item in items[:MAX_SEARCH_RESULTS]:
            if isinstance(item, dict):
                item = dict(item)
                for key in ("content", "snippet", "raw_content"):
                    if isinstance(item.get(key), str):
                        item[key] = cut_head(item[key], MAX_SEARCH_ITEM)
            kept.append(item)
        result["results"] = kept
        if len(items) > MAX_SEARCH_RESULTS:
            result["results_note"] = f"[truncated: showing {MAX_SEARCH_RESULTS} of {len(items)} results]"
    elif name == "bash_execute":
        for key in ("stdout", "output"):
            if isinstance(result.get(key), str):
                result[key] = cut_head_tail(result[key], MAX_BASH)
        if isinstance(result.get("stderr"), str):
            result["stderr"] = cut_head_tail(result["stderr"], MAX_BASH)
    elif name == "read_user_file":
        for key in ("content", "text"):
            if isinstance(result.get(key), str):
                result[key] = cut_head(result[key], MAX_FILE)
    return result


def mark_untrusted(result: dict[str, Any], source: str) -> dict[str, Any]:
    """Third-party text fields wrapped in one envelope id per result, with a notice naming it."""
    if not source:
        return result
    envelope_id = untrusted.new_id()

    def walk(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, key) for v in value]
        if isinstance(value, str) and value and key in UNTRUSTED_FIELDS:
            return untrusted.wrap(value, source, envelope_id)
        return value

    wrapped: dict[str, Any] = walk(result)
    if wrapped != result:
        wrapped["untrusted_data"] = untrusted.notice(source, envelope_id)
    return wrapped


def _generic_cap(result: dict[str, Any]) -> dict[str, Any]:
    for key, value in list(result.items()):
        if isinstance(value, str) and len(value) > MAX_GENERIC_FIELD + 200:  # room for a marker
            result[key] = cut_head(value, MAX_GENERIC_FIELD)
    encoded = json.dumps(result, ensure_ascii=False, default=str)
    if len(encoded) > MAX_GENERIC_TOTAL:
        return {"truncated_json": cut_head(encoded, MAX_GENERIC_TOTAL)}
    return result


# --- whole-context budget ------------------------------------------------------------------------


def message_tokens(message: dict[str, Any]) -> int:
    size = len(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {})
        size += len(fn.get("name", "")) + len(fn.get("arguments", "")) + 20
    return int(size / 3.5) + 4


def total_tokens(messages: list[dict[str, Any]], tools_tokens: int = 0) -> int:
    return sum(message_tokens(m) for m in messages) + tools_tokens


def _groups(messages: list[dict[str, Any]]) -> list[list[int]]:
    """Indices grouped so that an assistant message with tool calls travels with its results."""
    groups: list[list[int]] = []
    i = 0
    while i < len(messages):
        group = [i]
        if messages[i].get("role") == "assistant" and messages[i].get("tool_calls"):
            j = i + 1
            while j < len(messages) and messages[j].get("role") == "tool":
                group.append(j)
                j += 1
            i = j
        else:
            i += 1
        groups.append(group)
    return groups


def _shrink(out: list[dict[str, Any]], positions: list[int], budget_tokens: int, tools_tokens: int) -> bool:
    """Shortens the tool results at `positions` in order until the budget holds; True if it does."""
    for i in positions:
        if total_tokens(out, tools_tokens) <= budget_tokens:
            return True
        content = out[i].get("content") or ""
        if len(content) > SHRUNK_RESULT + 200:
            out[i]["content"] = (
                untrusted.close_envelopes(content[:SHRUNK_RESULT])
                + "\n"
                + marker(SHRUNK_RESULT, len(content))
                + " (older tool output shortened to fit the conversation)"
            )
    return total_tokens(out, tools_tokens) <= budget_tokens


def fit_context(
    messages: list[dict[str, Any]], budget_tokens: int, tools_tokens: int = 0
) -> list[dict[str, Any]]:
    """A copy of `messages` within `budget_tokens` (estimated), shrinking the oldest tool output first."""
    if total_tokens(messages, tools_tokens) <= budget_tokens:
        return messages
    out = [dict(m) for m in messages]
    last_user = max((i for i, m in enumerate(out) if m.get("role") == "user"), default=len(out))
    last_call = max(
        (i for i, m in enumerate(out) if m.get("role") == "assistant" and m.get("tool_calls")),
        default=len(out),
    )
    tool_positions = [i for i, m in enumerate(out) if m.get("role") == "tool"]
    older = [i for i in tool_positions if i < last_call]
    latest = [i for i in tool_positions if i > last_call]
    # 1. Shrink tool results, oldest first, except those the model has not read yet.
    if _shrink(out, older, budget_tokens, tools_tokens):
        return out
    # 2. Drop the oldest exchanges, never the system prompt nor the latest question onwards.
    droppable = [g for g in _groups(out) if g[0] < last_user and out[g[0]].get("role") != "system"]
    dropped: set[int] = set()
    for group in droppable:
        if total_tokens([m for i, m in enumerate(out) if i not in dropped], tools_tokens) <= budget_tokens:
            break
        dropped.update(group)
    out = [m for i, m in enumerate(out) if i not in dropped]
    # 3. Then the newest tool results too.
    latest = [i for i, m in enumerate(out) if m.get("role") == "tool"]
    if _shrink(out, latest, budget_tokens, tools_tokens):
        return out
    # 3. Still too big (one enormous question or current-turn output): cut long texts hard.
    if total_tokens(out, tools_tokens) > budget_tokens:
        room = max(200, int((budget_tokens - tools_tokens) * 3.5 / max(1, len(out))))
        for m in out:
            if m.get("role") != "system" and len(m.get("content") or "") > room:
                m["content"] = cut_head(m["content"], room)
    return out
