"""bash_execute: one shell command in a throw-away sandbox without network (pro mode only)."""

from __future__ import annotations

import logging
from typing import Any

from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.config import Settings
from bot.sandbox import bwrap as sandbox
from tools.modes import PRO

log = logging.getLogger(__name__)

MAX_COMMAND_CHARS = 10_000


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        return tool_error("command is required: a shell command line to run")
    if len(command) > MAX_COMMAND_CHARS:
        return tool_error(f"command is too long ({len(command)} characters, at most {MAX_COMMAND_CHARS})")
    try:
        result = await sandbox.execute(ctx.services, command)
    except sandbox.SandboxUnavailable as exc:
        return tool_error(f"code execution is unavailable right now: {exc}")
    except OSError as exc:
        log.exception("sandbox start failed")
        return tool_error(f"code execution failed to start: {exc}")
    return result.as_tool_result()


def _unavailable(settings: Settings) -> str | None:
    return sandbox.unavailable_reason(settings)


TOOL = Tool(
    name="bash_execute",
    description=(
        "Sandboxed shell: python3, no network, nothing kept, 30 s."
    ),
    parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    modes=PRO,
    step=StepText("💻", "Exécution du code", "Running code"),
    run=run,
    progress_note={"fr": "J'exécute le code…", "en": "Running the code…"},
    unavailable=_unavailable,
)
