"""Every tool's schema is what the tool accepts: arguments built at the schema's own bounds (minItems,
maxItems, maxLength, enums, required fields) pass the executor's check and the tool's own parser
where it has a pure one; values just outside a declared bound are refused with an error that names
the field. The quiz tools keep the seed's parameters exactly (issue 42)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import tools
from bot.agent import executor
from bot.agent.toolspec import Tool
from bot.documents.content import ContentError
from bot.documents.convert import parse_document
from bot.documents.pptx import parse_slides
from bot.documents.xlsx import parse_workbook
from bot.learning.quiz import QuizError, parse_mcq_args, parse_true_false_args
from tools.award_bonus_credits import requested_credits

TOOLS = {t.name: t for t in tools.all_tools()}

# The seed's `interactive_quiz` parameters (its tool definition), descriptions left out: the types,
# bounds and required fields are the contract, the wording is ours to shorten.
SEED_INTERACTIVE_QUIZ = {
    "type": "object",
    "properties": {
        "question": {"type": "string"},
        "options": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 4},
        "correct_index": {"type": "integer"},
        "explanation": {"type": "string"},
    },
    "required": ["question", "options", "correct_index", "explanation"],
}
# The seed names `true_false_quiz` ("a true/false statement") without printing its schema: these are
# the fields its store and check read, kept as the contract.
SEED_TRUE_FALSE_QUIZ = {
    "type": "object",
    "properties": {"statement": {"type": "string"}, "correct": {"type": "boolean"},
                   "explanation": {"type": "string"}},
    "required": ["statement", "correct", "explanation"],
}

Parser = Callable[[dict[str, Any]], object]


def _credits(args: dict[str, Any]) -> int:
    wanted = requested_credits(args.get("credits"))
    if wanted is None:
        raise ValueError("credits must be an integer")
    return wanted


# Tools whose arguments go through a pure parser after the executor's schema check (the others read
# their arguments inside a run that needs the database or a provider: the schema check is their parse).
PARSERS: dict[str, Parser] = {
    "interactive_quiz": parse_mcq_args,
    "true_false_quiz": parse_true_false_args,
    "award_bonus_credits": _credits,
    "generate_xlsx": parse_workbook,
    "generate_pptx": parse_slides,
    "generate_docx": parse_document,
    "generate_md": parse_document,
    "generate_pdf": parse_document,
    "generate_html": parse_document,
}
SAMPLES: dict[str, Any] = {"markdown": "# Les fractions\n\n- un demi\n- un tiers", "url": "https://example.org/",
                           "due_date": "2026-12-24", "due_time": "08:30", "to": "a@example.org",
                           "cc": "b@example.org"}


def _strip(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip(v) for k, v in schema.items() if k != "description"}
    return schema


def _value(name: str, schema: dict[str, Any], size: str) -> Any:
    """A valid value for `schema`; arrays at their minItems (size "min") or maxItems ("max")."""
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        return {k: _value(k, sub, size) for k, sub in schema.get("properties", {}).items()}
    if kind == "array":
        count = schema.get("minItems", 1) if size == "min" else schema.get("maxItems", 3)
        item = schema.get("items", {})
        if item.get("type") == "string":  # distinct, as options must be
            return [f"{name} {n + 1}" for n in range(count)]
        return [_value(name, item, size) for _ in range(count)]
    if kind == "string":
        return "x" * schema["maxLength"] if "maxLength" in schema else SAMPLES.get(name, f"Les {name}")
    return {"integer": schema.get("minimum", 1 if name != "correct_index" else 0),
            "number": 1.5, "boolean": True}[str(kind)]


def valid_cases(tool: Tool) -> Iterator[tuple[str, dict[str, Any]]]:
    props: dict[str, Any] = tool.parameters.get("properties", {})
    required = tool.parameters.get("required", [])
    for size in ("min", "max"):
        yield f"all fields, arrays at {size}Items", {k: _value(k, s, size) for k, s in props.items()}
    yield "required fields only", {k: _value(k, props[k], "min") for k in required}
    for key, sub in props.items():
        for choice in sub.get("enum", [])[1:]:
            yield f"{key}={choice}", {**{k: _value(k, s, "min") for k, s in props.items()}, key: choice}


def outside_cases(tool: Tool) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(label, field the error must name, arguments) just outside a declared bound."""
    props: dict[str, Any] = tool.parameters.get("properties", {})
    base = {k: _value(k, s, "min") for k, s in props.items()}
    for key in tool.parameters.get("required", []):
        yield f"no {key}", key, {k: v for k, v in base.items() if k != key}
    wrong = {"string": 5, "integer": "5", "boolean": "yes", "array": "x", "object": "x", "number": "x"}
    for key, sub in props.items():
        kind = sub.get("type")
        kind = kind[0] if isinstance(kind, list) else kind
        yield f"{key} of the wrong type", key, {**base, key: wrong[kind]}
        if "minItems" in sub:
            yield f"{key} below minItems", key, {**base, key: _value(key, sub, "min")[:-1]}
        if "maxItems" in sub:
            yield f"{key} above maxItems", key, {**base, key: [*_value(key, sub, "max"), f"{key} extra"]}
        if "maxLength" in sub:
            yield f"{key} above maxLength", key, {**base, key: "x" * (sub["maxLength"] + 1)}
        if "enum" in sub:
            yield f"{key} outside its enum", key, {**base, key: "not-" + sub["enum"][0]}


def test_the_quiz_tools_keep_the_seeds_parameters() -> None:
    seeds = {"interactive_quiz": SEED_INTERACTIVE_QUIZ, "true_false_quiz": SEED_TRUE_FALSE_QUIZ}
    for name, seed in seeds.items():
        ours = _strip(TOOLS[name].parameters)
        assert ours["type"] == seed["type"] and ours["required"] == seed["required"], name
        # Every seed field is there exactly; extra fields are optional ones only.
        assert {k: ours["properties"][k] for k in seed["properties"]} == seed["properties"], name
        assert not set(ours["required"]) - set(seed["properties"]), name


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_arguments_at_the_schemas_bounds_are_accepted(name: str) -> None:
    tool = TOOLS[name]
    for label, args in valid_cases(tool):
        assert executor._schema_error(tool, args) is None, (label, args)
        if name in PARSERS:
            PARSERS[name](args)  # raises on refusal, failing the test with the parser's own message


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_values_just_outside_the_bounds_are_refused_by_name(name: str) -> None:
    tool = TOOLS[name]
    cases = list(outside_cases(tool))
    assert cases, name  # every tool has a field the model may get wrong
    for label, field, args in cases:
        error = executor._schema_error(tool, args)
        assert error is not None and field in error, (label, error)


@pytest.mark.parametrize(("parser", "args", "said"), [
    (parse_mcq_args, {"question": "2+2 ?", "options": ["4"], "correct_index": 0, "explanation": "."},
     "2 to 4"),
    (parse_mcq_args, {"question": "2+2 ?", "options": ["1", "2", "3", "4", "5"], "correct_index": 3,
                      "explanation": "."}, "2 to 4"),
    (parse_mcq_args, {"question": "2+2 ?", "options": ["3", "4"], "correct_index": 2, "explanation": "."},
     "between 0 and 1"),
    (parse_mcq_args, {"options": ["3", "4"], "correct_index": 1, "explanation": "."},
     "'question' is required"),
    (parse_true_false_args, {"statement": "2+2=4", "correct": "yes", "explanation": "."}, "boolean"),
    (parse_true_false_args, {"statement": "2+2=4", "correct": True}, "'explanation' is required"),
])
def test_the_quiz_parsers_refuse_just_outside_the_seeds_bounds(parser: Parser, args: dict[str, Any],
                                                              said: str) -> None:
    with pytest.raises(QuizError, match=said):
        parser(args)


def test_document_parsers_refuse_what_their_schema_requires() -> None:
    with pytest.raises(ContentError, match="sheets"):
        parse_workbook({"title": "Notes"})
    with pytest.raises(ContentError, match="slides"):
        parse_slides({"title": "Cours"})
