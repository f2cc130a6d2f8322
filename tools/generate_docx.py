"""generate_docx: a Word document (contract, letter, formal correspondence)."""

from __future__ import annotations

from typing import Any

from bot import library
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.documents import run_cpu
from bot.documents.content import NO_CONTENT, ContentError, document_schema, has_content
from bot.documents.convert import parse_document
from bot.documents.docx import build_docx
from bot.documents.names import MIME_BY_EXT, safe_filename
from tools.generate_pdf import document_text
from tools.modes import EVERY_PROFILE

NAME = "generate_docx"


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    if not has_content(args):
        return tool_error(NO_CONTENT)
    try:
        doc = parse_document(args, language=ctx.language)
        data = await run_cpu(build_docx, doc)
    except ContentError as exc:
        return tool_error(str(exc))
    except TimeoutError:
        return tool_error("the document took too long to make: shorten it or split it")
    return await library.publish_generated(
        ctx,
        name=safe_filename(args.get("filename") or doc.title, ".docx"),
        mime=MIME_BY_EXT[".docx"],
        data=data,
        text_content=document_text(doc),
        caption=str(args.get("caption") or ""),
    )


TOOL = Tool(
    name=NAME,
    description="Word file.",
    parameters=document_schema(),
    modes=EVERY_PROFILE,
    step=StepText("📝", "Rédaction du document Word", "Writing the Word document"),
    run=run,
    side_effects=True,
    progress_note={"fr": "Je prépare le document Word…", "en": "Preparing your Word document…"},
)
