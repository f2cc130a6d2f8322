"""read_user_file: the text of one of the user's files (PDF, Word, Excel, PowerPoint, text, CSV).

The text was written by whoever wrote the document, not by the user: the model gets it as data.
A file of a class the student is in now is read too (marked « (classe 6e A) », read-only), and the
reading is recorded for the class's teacher (bot.school.record_opening).
"""

from __future__ import annotations

import asyncio
from typing import Any

from bot import library, school
from bot.agent import vision
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from tools.modes import EVERY_PROFILE

NAME = "read_user_file"


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    file_id = args.get("file_id")
    async with ctx.services.sessions() as db:
        # scoped: another user's id, or a class's the student is not in, is "not found"
        row, classes = await school.open_file(db, ctx.user_id, file_id, ctx.services.clock())
        await db.commit()
    if row is None:
        return tool_error(f"no file with id {file_id} in the user's library (see list_user_files)")
    try:
        offset = max(int(args.get("offset") or 0), 0)
    except (TypeError, ValueError):
        offset = 0
    result: ToolResult = {"success": True, "file_id": row.id, "name": row.name, "mime": row.mime}
    if row.cohort_id is not None and row.cohort_id in classes:
        result["name"] = f"{row.name} {school.class_label(classes[row.cohort_id], ctx.language)}"
        result["read_only"] = True
    if vision.is_image(row.mime):
        shown = await _show_image(ctx, row, result, list(classes))
        if shown is not None:
            return shown
    text = row.text or ""
    if not text:
        result["content"] = ""
        result["note"] = "this file has no readable text (an image, audio, or a damaged document)"
        return result
    # The executor shortens what the model sees; offset lets it read further on.
    result["total_chars"] = len(text)
    result["offset"] = offset
    result["content"] = text[offset:]
    return result


async def _show_image(ctx: ToolContext, row: Any, result: ToolResult,
                      cohorts: list[int]) -> ToolResult | None:
    """A photo: shown to a vision model as an image part, else its text read by OCR (kept on the file)."""
    images = ctx.extra.get("images")
    if ctx.services.settings.llm_vision and isinstance(images, list):
        try:
            jpeg = await asyncio.to_thread(vision.scale_to_jpeg, await library.read_bytes(ctx.services, row))
        except vision.ImageError:
            return tool_error(f"file {row.id} is not a readable image")
        images.append(vision.image_part(jpeg))
        result["note"] = "the image is shown to you right after this result"
        return result
    async with ctx.services.sessions() as db:
        fresh = await library.get_file(db, ctx.user_id, row.id, cohorts)
        text = await vision.read_text(ctx.services, db, fresh) if fresh is not None else ""
        await db.commit()
    if not text:
        result["content"] = ""
        result["note"] = ("no readable text was found on this photo: ask the user to type the exercise "
                          "or send a sharper photo")
        return result
    result["content"] = vision.photo_text_note(row.name, text, ctx.language)
    return result


TOOL = Tool(
    name=NAME,
    description="A user's file's text (photo: the image); cut: go on with offset.",
    parameters={
        "type": "object",
        "properties": {"file_id": {"type": "integer"}, "offset": {"type": "integer"}},
        "required": ["file_id"],
    },
    modes=EVERY_PROFILE,
    step=StepText("📖", "Lecture du fichier", "Reading the file"),
    run=run,
    untrusted_source="file",
)
