"""generate_xlsx: an Excel workbook (accounting entries, budgets, balance sheets)."""

from __future__ import annotations

from typing import Any

from bot import library
from bot.documents import run_cpu
from bot.documents.content import ContentError, cell_text, xml_safe
from bot.documents.names import MIME_BY_EXT, safe_filename
from bot.documents.xlsx import MAX_ROWS, MAX_SHEETS, SHEET_SCHEMA, Sheet, build_xlsx, parse_workbook
from bot.toolspec import Tool, ToolContext, ToolResult, tool_error
from tools.modes import modes_for

NAME = "generate_xlsx"

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "workbook title (also the default file name)"},
        "sheets": {"type": "array", "items": SHEET_SCHEMA, "description": f"at most {MAX_SHEETS} sheets"},
        "filename": {"type": "string", "description": "file name without extension"},
        "caption": {"type": "string", "description": "short message sent with the file"},
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


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    title = xml_safe(str(args.get("title") or "")).strip()[:300] or "Classeur"
    try:
        sheets = parse_workbook(args)
        data = await run_cpu(build_xlsx, title, sheets)
    except ContentError as exc:
        return tool_error(str(exc))
    except TimeoutError:
        return tool_error("the workbook took too long to make: use fewer rows")
    return await library.publish_generated(
        ctx,
        name=safe_filename(args.get("filename") or title, ".xlsx"),
        mime=MIME_BY_EXT[".xlsx"],
        data=data,
        text_content=workbook_text(title, sheets),
        caption=str(args.get("caption") or ""),
        sheets=[{"name": s.name, "rows": len(s.rows)} for s in sheets],
    )


TOOL = Tool(
    name=NAME,
    description=(
        "Create an Excel workbook (.xlsx: accounting entries, budgets, balance sheets) with one or "
        "more sheets, each with typed columns (text, number, integer, fcfa, xof, eur, percent, date) "
        "and rows; cells starting with '=' are formulas (e.g. '=SUM(C2:C20)'), totals: true adds a "
        f"Total row. At most {MAX_ROWS} rows per sheet. Sent to the user as an attachment."
    ),
    parameters=PARAMETERS,
    modes=modes_for(NAME),
    run=run,
    side_effects=True,
    progress_note={"fr": "Je prépare ton fichier Excel…", "en": "Preparing your Excel file…"},
)
