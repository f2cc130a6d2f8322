"""generate_html: one self-contained HTML page (newsletter, formatted content).

Everything the model writes is escaped, or sanitised when it gives HTML: the page runs no script
and loads nothing from elsewhere (see bot.documents.markdown)."""

from __future__ import annotations

from typing import Any

from bot import library
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.documents.content import NO_CONTENT, ContentError, document_schema, has_content
from bot.documents.convert import parse_document
from bot.documents.extract import _html as html_text
from bot.documents.markdown import build_html
from bot.documents.names import safe_filename
from tools.modes import EVERY_PROFILE

NAME = "generate_html"
MAX_HTML_CHARS = 300_000

# markdown and/or html: body HTML added after it (scripts, styles, images and handlers removed).
PARAMETERS = document_schema(html={"type": "string"})


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    raw_html = args.get("html") or ""
    if not isinstance(raw_html, str):
        return tool_error("html must be a string")
    if len(raw_html) > MAX_HTML_CHARS:
        return tool_error(f"html has {len(raw_html)} characters, at most {MAX_HTML_CHARS}: shorten it")
    if not has_content(args) and not raw_html.strip():
        return tool_error(NO_CONTENT + ", or html")
    try:
        doc = parse_document(args, language=ctx.language)
    except ContentError as exc:
        return tool_error(str(exc))
    page = build_html(doc, raw_html, lang=ctx.language)
    data = page.encode("utf-8")
    return await library.publish_generated(
        ctx,
        name=safe_filename(args.get("filename") or doc.title, ".html"),
        mime="text/html",
        data=data,
        text_content=html_text(data),
        caption=str(args.get("caption") or ""),
    )


TOOL = Tool(
    name=NAME,
    description="HTML page; html: extra body (sanitised).",
    parameters=PARAMETERS,
    modes=EVERY_PROFILE,
    step=StepText("🌐", "Création de la page HTML", "Building the HTML page"),
    run=run,
    side_effects=True,
)
