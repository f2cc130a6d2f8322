"""The executor's plain-Python argument check never accepts what jsonschema refuses."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from bot.agent import executor
from tools.registry import TOOLS

SCALARS: list[Any] = [0, 1, 1.0, 2.5, True, None, "", "a", "x" * 300, [], {}, [1], ["a"], {"a": 1}]


def _instance(schema: Any, rnd: random.Random, depth: int = 0) -> Any:
    if not isinstance(schema, dict) or depth > 4 or rnd.random() < 0.15:
        return rnd.choice(SCALARS)
    if "enum" in schema and rnd.random() < 0.7:
        return rnd.choice(schema["enum"])
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        value = {k: _instance(v, rnd, depth + 1) for k, v in schema.get("properties", {}).items()
                 if rnd.random() < 0.85}
        if rnd.random() < 0.1:
            value["unexpected"] = 1
        return value
    if kind == "array":
        return [_instance(schema.get("items", {}), rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    if kind == "string":
        return rnd.choice(["", "abc", "é" * rnd.randint(0, 300)])
    return rnd.choice([0, 5, 1.0, 2.5, True, "1"])


def test_every_tool_schema_has_a_fast_check_that_agrees_with_jsonschema() -> None:
    rnd = random.Random(7)
    for tool in TOOLS:
        assert executor._fast_check(tool.parameters) is not None, tool.name
        validator = executor._validator(tool.parameters)
        accepted = 0
        for _ in range(400):
            args = _instance(tool.parameters, rnd)
            if not isinstance(args, dict):
                continue
            fast = executor._fast_valid(tool.parameters, args)
            assert not fast or validator.is_valid(args), (tool.name, args)
            assert (executor._schema_error(tool, args) is None) == validator.is_valid(args)
            accepted += fast
        assert accepted > 0, tool.name  # the fast path is taken for valid arguments


def test_unknown_keywords_and_floats_as_integers_fall_back_to_jsonschema() -> None:
    assert executor._fast_check({"type": "object", "minProperties": 1}) is None
    schema = {"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["k"]}
    assert not executor._fast_valid(schema, {"k": 1.0})
    tool = next(iter(TOOLS))
    tool_like = replace(tool, parameters=schema)
    assert executor._schema_error(tool_like, {"k": 1.0}) is None  # jsonschema takes 1.0 as an integer
    assert "required" in (executor._schema_error(tool_like, {}) or "")
    assert tool is not None
