"""PowerPoint decks (python-pptx): a title slide, then content slides with bullets (two levels),
an optional table, and speaker notes."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from bot.documents.content import ContentError, cell_text, inline_runs

MAX_SLIDES = 60
MAX_BULLETS = 14
MAX_BULLET_CHARS = 400
MAX_TABLE_ROWS = 15
MAX_NOTES_CHARS = 5000

SLIDE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "bullets": {
            "type": "array",
            "description": "bullet points; start an item with '- ' to indent it under the previous one",
            "items": {"type": "string"},
        },
        "table": {
            "type": "object",
            "properties": {
                "columns": {"type": "array", "items": {"type": "string"}},
                "rows": {
                    "type": "array",
                    "items": {"type": "array", "items": {"type": ["string", "number", "null"]}},
                },
            },
        },
        "notes": {"type": "string", "description": "speaker notes"},
    },
    "required": ["title"],
}


@dataclass(frozen=True)
class Slide:
    title: str
    bullets: tuple[tuple[int, str], ...]  # (level, text)
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: str


def parse_slides(args: dict[str, Any]) -> list[Slide]:
    raw_slides = args.get("slides")
    if not isinstance(raw_slides, list) or not raw_slides:
        raise ContentError("slides must be a non-empty list of {title, bullets, notes}")
    if len(raw_slides) > MAX_SLIDES:
        raise ContentError(f"{len(raw_slides)} slides, at most {MAX_SLIDES}: merge or drop slides")
    slides = []
    for i, raw in enumerate(raw_slides):
        where = f"slides[{i}]"
        if not isinstance(raw, dict):
            raise ContentError(f"{where} must be an object with title, bullets and notes")
        bullets_raw = raw.get("bullets") or []
        if not isinstance(bullets_raw, list):
            raise ContentError(f"{where}.bullets must be a list of strings")
        if len(bullets_raw) > MAX_BULLETS:
            raise ContentError(
                f"{where} has {len(bullets_raw)} bullets, at most {MAX_BULLETS}: split the slide"
            )
        bullets = []
        for item in bullets_raw:
            text = cell_text(item).rstrip()
            level = 1 if text.startswith(("- ", "  ", "\t")) else 0
            text = text.lstrip(" \t-").strip() if level else text.strip()
            if len(text) > MAX_BULLET_CHARS:
                raise ContentError(
                    f"{where}: a bullet has {len(text)} characters, at most {MAX_BULLET_CHARS}"
                )
            if text:
                bullets.append((level, text))
        table = raw.get("table") or {}
        columns = tuple(cell_text(c) for c in (table.get("columns") or [])) if isinstance(table, dict) else ()
        rows_raw = (table.get("rows") or []) if isinstance(table, dict) else []
        if len(rows_raw) > MAX_TABLE_ROWS:
            raise ContentError(f"{where}.table has {len(rows_raw)} rows, at most {MAX_TABLE_ROWS} on a slide")
        width = max([len(columns), *(len(r) for r in rows_raw if isinstance(r, list))] or [0])
        if width > 10:
            raise ContentError(f"{where}.table has {width} columns, at most 10 on a slide")
        rows = tuple(
            tuple(cell_text(c) for c in r) + ("",) * (width - len(r)) for r in rows_raw if isinstance(r, list)
        )
        if columns and len(columns) < width:
            columns += ("",) * (width - len(columns))
        notes = cell_text(raw.get("notes"))
        if len(notes) > MAX_NOTES_CHARS:
            raise ContentError(f"{where}.notes has {len(notes)} characters, at most {MAX_NOTES_CHARS}")
        slides.append(Slide(cell_text(raw.get("title")).strip()[:300], tuple(bullets), columns, rows, notes))
    return slides


def _add_runs(paragraph: Any, text: str) -> None:
    for run_text, bold, italic in inline_runs(text):
        run = paragraph.add_run()
        run.text = run_text
        if bold:
            run.font.bold = True
        if italic:
            run.font.italic = True


def build_pptx(title: str, subtitle: str, slides: list[Slide]) -> bytes:
    from pptx import Presentation
    from pptx.util import Emu, Pt

    prs = Presentation()
    # 16:9, as phones and projectors show it.
    prs.slide_width, prs.slide_height = Emu(12192000), Emu(6858000)
    prs.core_properties.title = title
    prs.core_properties.author = "Deblo"
    first = prs.slides.add_slide(prs.slide_layouts[0])
    first.shapes.title.text = title
    first.placeholders[1].text = subtitle
    _fit_placeholders(first, prs)
    for slide_content in slides:
        has_table = bool(slide_content.rows or slide_content.columns)
        layout = prs.slide_layouts[5 if has_table and not slide_content.bullets else 1]
        slide = prs.slides.add_slide(layout)
        slide.shapes.title.text = slide_content.title
        _fit_placeholders(slide, prs)
        body = next((p for p in slide.placeholders if p.placeholder_format.idx == 1), None)
        if body is not None:
            frame = body.text_frame
            frame.word_wrap = True
            size = Pt(
                24 if len(slide_content.bullets) <= 5 else 20 if len(slide_content.bullets) <= 8 else 16
            )
            for n, (level, text) in enumerate(slide_content.bullets):
                paragraph = frame.paragraphs[0] if n == 0 else frame.add_paragraph()
                paragraph.level = level
                _add_runs(paragraph, text)
                for run in paragraph.runs:
                    run.font.size = size if level == 0 else Pt(size.pt - 4)
            if has_table:
                body.height = Emu(int(prs.slide_height * 0.3))
        if has_table:
            _add_table(slide, prs, slide_content, top_fraction=0.55 if slide_content.bullets else 0.22)
        if slide_content.notes:
            slide.notes_slide.notes_text_frame.text = slide_content.notes
    out = io.BytesIO()
    prs.save(out)
    return out.getvalue()


def _fit_placeholders(slide: Any, prs: Any) -> None:
    """The default template is 4:3; stretch its placeholders to the 16:9 width."""
    from pptx.util import Emu

    scale = prs.slide_width / Emu(9144000)
    for shape in slide.placeholders:
        shape.left = int(shape.left * scale)
        shape.width = int(shape.width * scale)


def _add_table(slide: Any, prs: Any, content: Slide, *, top_fraction: float) -> None:
    from pptx.util import Emu, Pt

    nrows = len(content.rows) + (1 if content.columns else 0)
    ncols = (
        max(len(content.columns), *(len(r) for r in content.rows)) if content.rows else len(content.columns)
    )
    left = Emu(int(prs.slide_width * 0.05))
    top = Emu(int(prs.slide_height * top_fraction))
    width = Emu(int(prs.slide_width * 0.9))
    height = Emu(int(prs.slide_height * 0.06) * nrows)
    table = slide.shapes.add_table(nrows, ncols, left, top, width, height).table
    all_rows = ([content.columns] if content.columns else []) + list(content.rows)
    for r, row in enumerate(all_rows):
        for c, value in enumerate(row):
            cell = table.cell(r, c)
            cell.text = value
            for paragraph in cell.text_frame.paragraphs:
                for run in paragraph.runs:
                    run.font.size = Pt(14 if nrows <= 8 else 11)
