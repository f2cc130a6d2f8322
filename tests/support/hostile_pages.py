"""What the tests of third-party text share: the start of a lesson page a hostile author writes
instructions into, and the tool results the model was given."""

from __future__ import annotations

import json
from typing import Any

# A page's head and the lesson it is about; each test adds its instructions and links, then closes
# `</article></body></html>`.
LESSON = """<!DOCTYPE html><html><head><title>Les fractions</title></head><body><article>
<h1>Les fractions</h1>
<p>Une fraction représente une partie d'un tout. Le numérateur est en haut et le dénominateur en bas.</p>
<p>Pour additionner deux fractions, on les met au même dénominateur, puis on additionne les numérateurs.</p>
"""


def tool_results(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tool results a request to the model carried, by tool call id."""
    return {m["tool_call_id"]: json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"}
