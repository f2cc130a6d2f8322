"""generate_pdf: a PDF report, memo or lesson summary, or a file of the user's library (or of a class
they are in now) as PDF."""

from __future__ import annotations

from typing import Any

from bot import library, school
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.documents import run_cpu
from bot.documents.content import ContentError, Document, document_schema, has_content, plain
from bot.documents.convert import converted, parse_document
from bot.documents.names import safe_filename
from bot.documents.pdf import MAX_PAGES, build_pdf
from tools.modes import EVERY_PROFILE

NAME = "generate_pdf"

# markdown, or source_file_id: a file of the user's library to convert instead.
PARAMETERS = document_schema(source_file_id={"type": "integer"})


def document_text(doc: Document) -> str:
    """The text a search over the library should find in the generated file."""
    parts = [doc.title, doc.subtitle]
    for b in doc.blocks:
        parts.append(plain(b.text))
        parts.extend(plain(i) for i in b.items)
        parts.append(" | ".join(b.columns))
        parts.extend(" | ".join(r) for r in b.rows)
    return "\n".join(p for p in parts if p)


def _render(doc: Document) -> tuple[bytes, int]:
    return build_pdf(doc, max_pages=MAX_PAGES)


def _convert_and_render(
    data: bytes, name: str, mime: str, title: str, language: str
) -> tuple[bytes, int, str, tuple[str, ...]]:
    found = converted(data, name, mime, title, language)
    pdf, pages = build_pdf(found.document, max_pages=MAX_PAGES)
    return pdf, pages, document_text(found.document), found.uncomputed


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    source_id = args.get("source_file_id")
    uncomputed: tuple[str, ...] = ()
    try:
        if source_id not in (None, ""):
            async with ctx.services.sessions() as db:  # a class's file too: an opening for the teacher
                source, _ = await school.open_file(db, ctx.user_id, source_id, ctx.services.clock())
                await db.commit()
            if source is None:
                return tool_error(f"no file with id {source_id} in the user's library (see list_user_files)")
            data = await library.read_bytes(ctx.services, source)
            title = str(args.get("title") or "").strip() or source.name.rsplit(".", 1)[0]
            pdf, pages, text, uncomputed = await run_cpu(
                _convert_and_render, data, source.name, source.mime, title, ctx.language
            )
            name = safe_filename(args.get("filename") or source.name.rsplit(".", 1)[0], ".pdf")
        else:
            if not has_content(args):
                return tool_error("give the content as markdown, or source_file_id to convert a file")
            doc = parse_document(args, language=ctx.language)
            pdf, pages = await run_cpu(_render, doc)
            text = document_text(doc)
            name = safe_filename(args.get("filename") or doc.title, ".pdf")
    except ContentError as exc:
        return tool_error(str(exc))
    except TimeoutError:
        return tool_error("the PDF took too long to make: shorten it or split it into several documents")
    return await library.publish_generated(
        ctx,
        name=name,
        mime="application/pdf",
        data=pdf,
        text_content=text,
        caption=str(args.get("caption") or ""),
        pages=pages,
        # A workbook formula that could not be computed is printed as its text, flagged.
        **({"uncomputed_formulas": list(uncomputed)} if uncomputed else {}),
    )


TOOL = Tool(
    name=NAME,
    description=f"PDF, max {MAX_PAGES} pages; source_file_id: a user's file as PDF.",
    parameters=PARAMETERS,
    modes=EVERY_PROFILE,
    step=StepText("📄", "Création du PDF", "Making the PDF"),
    run=run,
    side_effects=True,
    progress_note={"fr": "Je prépare le document PDF…", "en": "Preparing your PDF document…"},
)
