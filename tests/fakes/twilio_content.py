"""What the fake Twilio's Content API checks (tests/fakes/twilio.py): a content body Twilio would
refuse, and a content filled in with a message's ContentVariables, as the user would see it."""

from __future__ import annotations

import json
import re
from typing import Any

_VARIABLE = re.compile(r"\{\{(\w+)\}\}")
# Per content type: the list of choices, and each field's limit once the variables are filled in.
_CHOICES = {"twilio/quick-reply": ("actions", {"title": 20, "id": 200}),
            "twilio/list-picker": ("items", {"item": 24, "id": 200, "description": 72})}


def content_problem(body: Any) -> str | None:
    """Why Twilio would refuse this content's creation, or None."""
    if not isinstance(body, dict) or not isinstance(body.get("language"), str):
        return "language is required"
    types = body.get("types")
    if not isinstance(types, dict) or not types:
        return "types is required"
    for kind, spec in types.items():
        if kind not in (*_CHOICES, "twilio/text") or not isinstance(spec, dict):
            return f"unknown content type {kind}"
        if not isinstance(spec.get("body"), str) or not spec["body"]:
            return f"{kind}: body is required"
        if kind == "twilio/text":
            continue
        key, limits = _CHOICES[kind]
        choices = spec.get(key)
        if not isinstance(choices, list) or not 1 <= len(choices) <= 10:
            return f"{kind}: {key} must hold 1 to 10 entries"
        required = [name for name in limits if name != "description"]
        for choice in choices:
            if not isinstance(choice, dict) or not all(choice.get(name) for name in required):
                return f"{kind}: every entry needs {' and '.join(required)}"
            if any(len(str(choice.get(name, ""))) > limit for name, limit in limits.items()):
                return f"{kind}: an entry is too long"
        if kind == "twilio/list-picker" and not spec.get("button"):
            return "twilio/list-picker: button is required"
    return None


def render(content: dict[str, Any], variables_json: str) -> dict[str, Any] | tuple[int, str]:
    """The content's types with the variables filled in, or (error code, message) as Twilio refuses:
    ContentVariables not a JSON object (21656), a filled choice over its limit (63021)."""
    try:
        variables = json.loads(variables_json)
    except ValueError:
        variables = None
    if not isinstance(variables, dict):
        return 21656, "The ContentVariables Parameter is invalid."
    values = {**content.get("variables", {}), **{str(k): str(v) for k, v in variables.items()}}
    rendered: dict[str, Any] = json.loads(_VARIABLE.sub(
        lambda m: json.dumps(values.get(m.group(1), ""))[1:-1], json.dumps(content["types"])))
    for kind, (key, limits) in _CHOICES.items():
        for choice in rendered.get(kind, {}).get(key, []):
            if any(len(str(choice.get(name, ""))) > limit for name, limit in limits.items()):
                return 63021, f"Invalid content: a {kind} choice is too long"
    return rendered
