"""Collects `TOOL` from every module of this package. Adding a tool: write tools/<name>.py with TOOL."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from bot.agent.toolspec import Tool


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
