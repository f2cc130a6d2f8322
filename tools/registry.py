"""Collects `TOOL` from every module of this package. Adding a tool: write tools/<name>.py with TOOL.

What a mode is offered is derived here from what each tool states, never kept as a list of names.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from bot.agent.toolspec import Tool
from tools.modes import MODES, PARENT


def _discover() -> tuple[Tool, ...]:
    found: list[Tool] = []
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda i: i.name):
        module = importlib.import_module(f"tools.{info.name}")
        tool = getattr(module, "TOOL", None)
        if isinstance(tool, Tool):
            found.append(tool)
    names = [t.name for t in found]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise RuntimeError(f"tool names defined twice: {sorted(duplicates)}")
    return tuple(found)


TOOLS: tuple[Tool, ...] = _discover()

# Every tool's name, in the order the tools are offered (their modules' names, sorted).
ALL_TOOL_NAMES: tuple[str, ...] = tuple(t.name for t in TOOLS)

# The names each mode is offered, from each tool's own `modes`.
MODE_TOOLS: dict[str, frozenset[str]] = {
    mode: frozenset(t.name for t in TOOLS if mode in t.modes) for mode in MODES
}

# A parent's tools, from each tool's own `modes` (no new mode: MODE_TOOLS keeps the three).
PARENT_TOOLS: frozenset[str] = frozenset(t.name for t in TOOLS if PARENT in t.modes)


def modes_for(name: str) -> frozenset[str]:
    """The modes a tool is offered in (none for a name that is no tool)."""
    return frozenset(mode for mode, names in MODE_TOOLS.items() if name in names)
