"""The 24 tools. Each module defines one `TOOL`; this package lists them and filters by mode."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from bot.agent.toolspec import StepText, Tool
from bot.config import Settings


def all_tools() -> tuple[Tool, ...]:
    """Every tool that exists, imported here so that `bot` never has to."""
    from tools import registry

    return registry.TOOLS


def by_name(tools: Iterable[Tool] | None = None) -> dict[str, Tool]:
    return {t.name: t for t in (all_tools() if tools is None else tools)}


def for_mode(mode: str, settings: Settings) -> list[Tool]:
    """The tools offered to the model in `mode`: those that name it in their `modes` and are usable
    here, in the order of `all_tools()`."""
    return [t for t in all_tools() if mode in t.modes and t.unavailable(settings) is None]


def offered(services: Any, mode: str, role: str | None = None) -> list[Tool]:
    """The tools a turn in `mode` is offered: none for guests; for a parent in the child mode, the
    tools that name "parent" in their `modes` (tools/modes.py);
    tests may put their own in `services.extra["tools_for_mode"]` (the composition seam handlers use)."""
    from tools import modes

    if mode == "guest":
        return []
    provider = services.extra.get("tools_for_mode") or for_mode
    if mode == "child" and role == "parent":
        return list(provider(modes.PARENT, services.settings))
    return list(provider(mode, services.settings))


def known_names(offered_tools: Iterable[Tool]) -> frozenset[str]:
    """Names the executor recognises: every real tool, and whatever this turn was offered."""
    return frozenset(t.name for t in all_tools()) | {t.name for t in offered_tools}


@cache
def step_texts() -> Mapping[str, StepText]:
    """Each tool's step text by name (`Tool.step`), for the texts of background jobs (bot.jobs)."""
    return {t.name: t.step for t in all_tools() if t.step is not None}


def step_of(name: str) -> StepText | None:
    """The step text of the tool called `name`; None for a name that is no tool."""
    return step_texts().get(name)
