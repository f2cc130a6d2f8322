"""read_user_file: the text of one of the user's files (PDF, Word, Excel, PowerPoint, text, CSV)."""

from __future__ import annotations

from typing import Any

from bot import library
from bot.toolspec import Tool, ToolContext, ToolResult, tool_error
from tools.modes import modes_for

NAME = "read_user_file"


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    file_id = args.get("file_id")
    async with ctx.services.sessions() as db:
        row = await library.get_file(db, ctx.user_id, file_id)  # scoped: another user's id is "not found"
    if row is None:
        return tool_error(f"no file with id {file_id} in the user's library (see list_user_files)")
    try:
        offset = max(int(args.get("offset") or 0), 0)
    except (TypeError, ValueError):
        offset = 0
    text = row.text or ""
    result: ToolResult = {"success": True, "file_id": row.id, "name": row.name, "mime": row.mime}
    if not text:
        result["content"] = ""
        result["note"] = "this file has no readable text (an image, audio, or a damaged document)"
        return result
    # The executor shortens what the model sees; offset lets it read further on.
    result["total_chars"] = len(text)
    result["offset"] = offset
    result["content"] = text[offset:]
    return result


TOOL = Tool(
    name=NAME,
    description=(
        "Read the text of one of the user's files by id (PDF, Word, Excel, PowerPoint, text, Markdown, "
        "CSV). Long files are cut: pass offset to read further."
    ),
    parameters={
        "type": "object",
        "properties": {
            "file_id": {"type": "integer", "description": "id from list_user_files or search_user_files"},
            "offset": {"type": "integer", "minimum": 0, "description": "character to start from"},
        },
        "required": ["file_id"],
    },
    modes=modes_for(NAME),
    run=run,
)
