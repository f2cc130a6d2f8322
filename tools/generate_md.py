"""generate_md: a Markdown document (notes, checklists, structured text)."""

from __future__ import annotations

from typing import Any

from bot import library
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.documents.content import NO_CONTENT, ContentError, document_schema, has_content
from bot.documents.convert import parse_document
from bot.documents.markdown import build_md
from bot.documents.names import safe_filename
from tools.modes import EVERY_PROFILE

NAME = "generate_md"


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    if not has_content(args):
        return tool_error(NO_CONTENT)
    try:
        doc = parse_document(args, language=ctx.language)
    except ContentError as exc:
        return tool_error(str(exc))
    text = build_md(doc)
    return await library.publish_generated(
        ctx,
        name=safe_filename(args.get("filename") or doc.title, ".md"),
        mime="text/markdown",
        data=text.encode("utf-8"),
        text_content=text,
        caption=str(args.get("caption") or ""),
    )


TOOL = Tool(
    name=NAME,
    description="Markdown file.",
    parameters=document_schema(),
    modes=EVERY_PROFILE,
    step=StepText("🗒️", "Rédaction du document Markdown", "Writing the Markdown document"),
    run=run,
    side_effects=True,
)
