"""generate_xlsx: an Excel workbook (accounting entries, budgets, balance sheets)."""

from __future__ import annotations

from typing import Any

from bot import library
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.documents import run_cpu
from bot.documents.calc import Computed, computed_workbook
from bot.documents.content import FILE_FIELDS, ContentError, cell_text, xml_safe
from bot.documents.extract import extract_text
from bot.documents.names import MIME_BY_EXT, safe_filename
from bot.documents.xlsx import MAX_ROWS, SHEET_SCHEMA, Sheet, parse_workbook
from tools.modes import EVERY_PROFILE

NAME = "generate_xlsx"

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "sheets": {"type": "array", "items": SHEET_SCHEMA},
        **FILE_FIELDS,
    },
    "required": ["title", "sheets"],
}

MAX_INDEXED_CHARS = 100_000


def workbook_text(title: str, sheets: list[Sheet]) -> str:
    lines = [title]
    size = 0
    for sheet in sheets:
        lines.append(f"# {sheet.name}")
        lines.append(" | ".join(c.header for c in sheet.columns))
        for row in sheet.rows:
            line = " | ".join(cell_text(v) for v in row)
            lines.append(line)
            size += len(line)
            if size > MAX_INDEXED_CHARS:
                return "\n".join(lines)
    return "\n".join(lines)


def _build(title: str, sheets: list[Sheet], language: str) -> tuple[Computed, str]:
    """The workbook with its formulas' values, and its text as searches find it (the values)."""
    computed = computed_workbook(title, sheets, language)
    text = extract_text(computed.data, "classeur.xlsx", MIME_BY_EXT[".xlsx"])
    return computed, f"{title}\n{text}" if text else workbook_text(title, sheets)


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    title = xml_safe(str(args.get("title") or "")).strip()[:300] or "Classeur"
    try:
        sheets = parse_workbook(args)
        computed, text = await run_cpu(_build, title, sheets, ctx.language)
    except ContentError as exc:
        return tool_error(str(exc))
    except TimeoutError:
        return tool_error("the workbook took too long to make: use fewer rows")
    # A formula the engine could not compute is shown flagged in the file: the model is told which.
    extra = {"uncomputed_formulas": computed.notes()} if computed.uncomputed else {}
    return await library.publish_generated(
        ctx,
        name=safe_filename(args.get("filename") or title, ".xlsx"),
        mime=MIME_BY_EXT[".xlsx"],
        data=computed.data,
        text_content=text,
        caption=str(args.get("caption") or ""),
        sheets=[{"name": s.name, "rows": len(s.rows)} for s in sheets],
        **extra,
    )


TOOL = Tool(
    name=NAME,
    description=f"Excel: rows, header first, max {MAX_ROWS}; '=' formulas; totals: Total row.",
    parameters=PARAMETERS,
    modes=EVERY_PROFILE,
    step=StepText("📊", "Génération du tableur Excel", "Building the Excel spreadsheet"),
    run=run,
    side_effects=True,
    progress_note={"fr": "Je prépare le fichier Excel…", "en": "Preparing your Excel file…"},
)
