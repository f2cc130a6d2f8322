"""save_memory: remember a lasting fact about the user for later conversations."""

from __future__ import annotations

from typing import Any

from bot import memory
from bot.toolspec import Tool, ToolContext, ToolResult, tool_error
from tools.modes import modes_for

NAME = "save_memory"


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    fact = args.get("fact")
    if not isinstance(fact, str) or not fact.strip():
        return tool_error("fact must be a non-empty sentence")
    async with ctx.services.sessions() as db:
        try:
            status, row = await memory.save_fact(db, ctx.user_id, fact, now=ctx.services.clock())
        except memory.MemoryFull:
            return tool_error(
                f"memory is full ({memory.MAX_FACTS} facts): tell the user to send MEMOIRE to see them "
                "and OUBLIE followed by a number to forget one"
            )
        await db.commit()
    if status == "empty":
        return tool_error("fact must contain words")
    assert row is not None
    return {"success": True, "status": "already_known" if status == "known" else "saved", "fact": row.fact}


TOOL = Tool(
    name=NAME,
    description=(
        "Remember a lasting fact about the user for future conversations (class, school, subjects, "
        "goals, job, preferences), as one short sentence. Not for passing details or secrets. "
        "The user can list facts with MEMOIRE and delete one with OUBLIE n."
    ),
    parameters={
        "type": "object",
        "properties": {
            "fact": {
                "type": "string",
                "description": f"one short sentence, at most {memory.MAX_FACT_CHARS} characters",
            },
        },
        "required": ["fact"],
    },
    modes=modes_for(NAME),
    run=run,
    side_effects=True,
    exclusive=True,
)
