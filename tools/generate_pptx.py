"""generate_pptx: a PowerPoint deck (training material, pitch)."""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from bot import library
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.documents import run_cpu
from bot.documents.content import ContentError, plain, xml_safe
from bot.documents.names import MIME_BY_EXT, safe_filename
from bot.documents.pptx import MAX_SLIDES, SLIDES_SCHEMA, Slide, build_pptx, parse_slides
from tools.modes import EVERY_PROFILE

NAME = "generate_pptx"

PARAMETERS: dict[str, Any] = SLIDES_SCHEMA


def slides_text(title: str, subtitle: str, slides: list[Slide]) -> str:
    parts = [title, subtitle]
    for s in slides:
        parts.append(s.title)
        parts.extend(plain(t) for _level, t in s.bullets)
        parts.extend(" | ".join(r) for r in ((s.columns,) if s.columns else ()) + s.rows)
        parts.append(s.notes)
    return "\n".join(p for p in parts if p)


def slide_count(data: bytes) -> int:
    # Long bullets and tables continue on extra slides, so the count comes from the file itself.
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    return sum(1 for n in names if re.fullmatch(r"ppt/slides/slide\d+\.xml", n))


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    title = xml_safe(str(args.get("title") or "")).strip()[:300] or "Présentation"
    subtitle = xml_safe(str(args.get("subtitle") or "")).strip()[:300]
    try:
        slides = parse_slides(args)
        data = await run_cpu(build_pptx, title, subtitle, slides, ctx.language)
    except ContentError as exc:
        return tool_error(str(exc))
    except TimeoutError:
        return tool_error("the presentation took too long to make: use fewer slides")
    return await library.publish_generated(
        ctx,
        name=safe_filename(args.get("filename") or title, ".pptx"),
        mime=MIME_BY_EXT[".pptx"],
        data=data,
        text_content=slides_text(title, subtitle, slides),
        caption=str(args.get("caption") or ""),
        slides=slide_count(data),
    )


TOOL = Tool(
    name=NAME,
    description=(
        f"PowerPoint, max {MAX_SLIDES} slides split by ---: # title, bullets, table, Notes:"
    ),
    parameters=PARAMETERS,
    modes=EVERY_PROFILE,
    step=StepText("📽️", "Création de la présentation PowerPoint", "Building the PowerPoint deck"),
    run=run,
    side_effects=True,
    progress_note={"fr": "Je prépare la présentation…", "en": "Preparing your presentation…"},
)
