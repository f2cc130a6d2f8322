"""Every tool called as a model following its schema literally would call it: arguments made from
the schema alone (every field, then only the required ones, and one call per enum value and per
type of a field that takes several), run through the executor. Each call succeeds or fails for a
reason the schema cannot express (a file id that is not the user's, a service not configured), never
because of the shape of its arguments."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pytest

from bot.agent.executor import TurnMemory, execute_calls
from bot.agent.sse import ToolCall
from bot.agent.toolspec import Tool, ToolContext
from bot.storage.models import Conversation
from tests.support.library import Library
from tools.registry import TOOLS

# One backend: the database only holds the file; the document does not depend on it.
pytestmark = pytest.mark.one_backend

# What a model writes in a text field of a given name (a plain word elsewhere).
TEXTS = {
    "url": "https://deblo.invalid/",  # a name that never resolves: no request leaves the machine
    "due_date": "2030-12-31",
    "due_time": "18:00",
    "to": "ami@example.com",
    "cc": "collegue@example.com",
    "markdown": "# Bilan\n\n| Poste | Montant |\n|---|---|\n| Caisse | 150 000 |",
    "html": "<p>Bonjour</p>",
    "command": "echo bonjour",
    "name": "Actif",
}
# Words that say the shape of the arguments was wrong.
SHAPE_ERROR = re.compile(
    r"must be (a|an) |list of|not a (list|string|number)|schema|invalid_arguments|TypeError|KeyError|"
    r"AttributeError|the tool failed",
    re.I,
)


def _value(name: str, schema: dict[str, Any], choice: int = 0) -> Any:
    if "enum" in schema:
        return schema["enum"][choice % len(schema["enum"])]
    kinds = schema.get("type", "string")
    kind = kinds[choice % len(kinds)] if isinstance(kinds, list) else kinds
    if kind == "object":
        return {k: _value(k, v, choice) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        items = schema.get("items", {})
        values = [_value(name, items, choice + n) for n in range(2)]  # a list: a few distinct items
        return [f"{v} {n + 1}" if isinstance(v, str) and n and name not in TEXTS else v
                for n, v in enumerate(values)]
    if kind == "integer":
        return 1
    if kind == "number":
        return 150_000
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return TEXTS.get(name, "Fractions")


def _choices(schema: Any) -> int:
    """How many variants a schema has: its longest enum or list of types, nested ones included."""
    if not isinstance(schema, dict):
        return 1
    own = max(len(schema.get("enum", [])), len(schema["type"]) if isinstance(schema.get("type"), list) else 1)
    nested = [_choices(v) for v in schema.get("properties", {}).values()] + [_choices(schema.get("items"))]
    return max([own, *nested])


def argument_sets(tool: Tool) -> list[dict[str, Any]]:
    schema = tool.parameters
    required = set(schema.get("required", []))
    full = [_value("", schema, n) for n in range(_choices(schema))]
    minimal = {k: v for k, v in full[0].items() if k in required}
    return [*full, minimal]


async def test_every_tool_accepts_what_its_schema_says(lib: Library) -> None:
    assert len(TOOLS) == 24
    conversations = {}
    async with lib.services.sessions() as db:
        for user in lib.users:
            db.add(conversation := Conversation(user_id=user.id))
            await db.flush()
            conversations[user.id] = conversation.id
        await db.commit()

    def context(user: Any) -> ToolContext:
        return replace(lib.ctx(user), conversation_id=conversations[user.id])

    calls: list[tuple[Tool, dict[str, Any]]] = [(t, a) for t in TOOLS for a in argument_sets(t)]
    outcomes = []
    for n, (tool, args) in enumerate(calls):
        user = lib.users[1] if "child" in tool.modes and "pro" not in tool.modes else lib.users[0]
        call = ToolCall(f"call_{n}", tool.name, json.dumps(args))

        def make_context(_call: ToolCall, user: Any = user) -> ToolContext:
            return context(user)

        [outcome] = await execute_calls(
            [call], tools={tool.name: tool}, mode=user.mode,
            make_context=make_context, timeout_s=30, memory=TurnMemory(),
        )
        outcomes.append((tool.name, args, outcome))
    for name, args, outcome in outcomes:
        assert outcome.status in ("ok", "error"), (name, args, outcome.result)
        if outcome.status == "error":
            error = str(outcome.result.get("error"))
            assert not SHAPE_ERROR.search(error), (name, args, error)
    succeeded = {name for name, _a, o in outcomes if o.status == "ok"}
    # The tools that need nothing the test has not set up do their work.
    assert {"generate_xlsx", "generate_pptx", "generate_docx", "generate_md", "create_task", "save_memory",
            "list_user_files", "report_exercise_result"} <= succeeded, succeeded
    xlsx = next(o.result for n, a, o in outcomes if n == "generate_xlsx" and o.status == "ok")
    assert xlsx["sheets"][0]["rows"] >= 1  # rows as the schema describes them: lists of cells
