"""The fixed prompt of every model call (system prompt + tool schemas, bytes of JSON as sent) stays
within 9,500 B (issue 42's budget, which replaced "a third of the frozen baseline" once the quiz
schemas got the seed's bounds back) in every mode and language, with every tool kept."""

from __future__ import annotations

import jsonschema
import pytest

import tools
from bench.cost.measure import LANGUAGES, MODES, baseline_prompt, current_prompt, sizes, tool_names
from tools.registry import ALL_TOOL_NAMES, MODE_TOOLS

CASES = [(mode, lang) for mode in MODES for lang in LANGUAGES]
BUDGET_BYTES = 9_500  # README "Prompt size": sizes(current_prompt(mode, language))["total"]


@pytest.mark.parametrize(("mode", "language"), CASES)
def test_fixed_prompt_stays_within_the_byte_budget(mode: str, language: str) -> None:
    size = sizes(current_prompt(mode, language))
    assert size["total"] == size["system"] + size["tools"]
    assert size["total"] <= BUDGET_BYTES, size
    if mode != "guest":  # the budget is measured with the tool schemas in it, not without
        assert size["tools"] > 5000, size


@pytest.mark.parametrize(("mode", "language"), CASES)
def test_every_mode_keeps_the_tools_it_had(mode: str, language: str) -> None:
    before, after = baseline_prompt(mode, language), current_prompt(mode, language)
    assert tool_names(after) == tool_names(before) == set(MODE_TOOLS[mode])
    assert len(tool_names(after)) == {"guest": 0, "child": 22, "pro": 24}[mode]


def test_the_24_tools_keep_their_names_and_valid_strict_schemas() -> None:
    assert sorted(t.name for t in tools.all_tools()) == sorted(ALL_TOOL_NAMES) and len(ALL_TOOL_NAMES) == 24
    descriptions = [t.description for t in tools.all_tools()]
    assert len(set(descriptions)) == 24  # no description shared by two tools
    for tool in tools.all_tools():
        jsonschema.validators.validator_for(tool.parameters).check_schema(tool.parameters)
        assert tool.parameters["type"] == "object" and tool.description.strip(), tool.name
        assert set(tool.parameters.get("required", [])) <= set(tool.parameters["properties"]), tool.name


def test_shared_rules_are_in_the_system_prompt_once() -> None:
    child = current_prompt("child", "fr")["system"]
    for rule in ("generate_*: markdown", "send_*: to this person only", "create_task: due_date"):
        assert child.count(rule) == 1
    assert "generate_*" not in current_prompt("guest", "fr")["system"]  # no tools, no tool rules
