"""PowerPoint decks (python-pptx): a title slide, then content slides with bullets (two levels),
an optional table, and speaker notes.

Every text is laid out here, not left to the viewer: titles and bodies sit at their layout's
positions, font sizes are computed so the text fits its frame, and what does not fit even at the
smallest readable size (long bullet lists, long tables) continues on the next slide, the table's
header repeated.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any

from pptx.oxml.ns import qn

from bot.documents.content import (
    FILE_FIELDS,
    NUMERIC_KINDS,
    ContentError,
    cell_text,
    column_types,
    inline_runs,
    language_of,
    language_tag,
    plain,
)

MAX_SLIDES = 60
MAX_BULLETS = 14
MAX_BULLET_CHARS = 400
MAX_TABLE_ROWS = 60  # continued over as many slides as it takes
MAX_CELL_CHARS = 300
MAX_NOTES_CHARS = 5000

# The arguments the model writes: the deck as Markdown, one slide per `---` line (or per `# ` title).
SLIDES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "markdown": {"type": "string"},
        **FILE_FIELDS,
    },
    "required": ["title", "markdown"],
}

# The older form, still read: a list of {title, bullets, table: {columns, rows}, notes}.
SLIDE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "bullets": {"type": "array", "items": {"type": "string"}},
        "table": {"type": "object"},
        "notes": {"type": "string"},
    },
    "required": ["title"],
}
MAX_MARKDOWN_CHARS = 200_000
_SLIDE_BREAK = re.compile(r"^[ \t]*---+[ \t]*$", re.M)
_NEW_TITLE = re.compile(r"^(?=# )", re.M)
_NOTES = re.compile(r"^[ \t]*(?:notes?|speaker notes|notes de l'orateur)[ \t]*:[ \t]*", re.I | re.M)


@dataclass(frozen=True)
class Slide:
    title: str
    bullets: tuple[tuple[int, str], ...]  # (level, text)
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: str


def markdown_slides(text: str) -> list[dict[str, Any]]:
    """The deck written as Markdown, as the older list of slides: a slide per `---` line or per
    `# ` title; its first heading is its title, lists and paragraphs its bullets (nested items one
    level down), a Markdown table its table, and what follows a `Notes:` line its speaker notes."""
    from bot.documents.convert import markdown_blocks

    if len(text) > MAX_MARKDOWN_CHARS:
        raise ContentError(f"markdown has {len(text)} characters, at most {MAX_MARKDOWN_CHARS}: shorten it")
    chunks = [c for part in _SLIDE_BREAK.split(text) for c in _NEW_TITLE.split(part) if c.strip()]
    slides = []
    for n, chunk in enumerate(chunks):
        found = _NOTES.search(chunk)
        body, notes = (chunk[: found.start()], chunk[found.end() :].strip()) if found else (chunk, "")
        slide: dict[str, Any] = {"title": "", "bullets": [], "notes": notes}
        for i, block in enumerate(markdown_blocks(body, "")):
            kind = block["type"]
            if kind == "heading" and i == 0:
                slide["title"] = block["text"]
            elif kind == "table":
                if "table" in slide:
                    raise ContentError(f"slide {n + 1} has two tables, at most one: split the slide")
                slide["table"] = {"columns": block["columns"], "rows": block["rows"]}
            elif kind == "bullets":
                levels = block["levels"] or [0] * len(block["items"])
                for k, (item, level) in enumerate(zip(block["items"], levels, strict=False)):
                    text_ = f"{k + 1}. {item}" if block["ordered"] else item
                    slide["bullets"].append(("- " if level else "") + text_)
            elif block.get("text"):
                slide["bullets"].append(f"**{block['text']}**" if kind == "heading" else block["text"])
        slides.append(slide)
    return slides


def parse_slides(args: dict[str, Any]) -> list[Slide]:
    raw_slides = args.get("slides")
    if raw_slides is None and isinstance(args.get("markdown"), str):
        raw_slides = markdown_slides(args["markdown"])
    if not isinstance(raw_slides, list) or not raw_slides:
        raise ContentError("give the slides as markdown: `# title` then bullets, slides separated by ---")
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
            raise ContentError(
                f"{where}.table has {len(rows_raw)} rows, at most {MAX_TABLE_ROWS}: summarise it or split it"
            )
        width = max([len(columns), *(len(r) for r in rows_raw if isinstance(r, list))] or [0])
        if width > 10:
            raise ContentError(f"{where}.table has {width} columns, at most 10 on a slide")
        rows = tuple(
            tuple(cell_text(c) for c in r) + ("",) * (width - len(r)) for r in rows_raw if isinstance(r, list)
        )
        if any(len(c) > MAX_CELL_CHARS for row in (columns, *rows) for c in row):
            raise ContentError(f"{where}.table has a cell over {MAX_CELL_CHARS} characters: shorten it")
        if columns and len(columns) < width:
            columns += ("",) * (width - len(columns))
        notes = cell_text(raw.get("notes"))
        if len(notes) > MAX_NOTES_CHARS:
            raise ContentError(f"{where}.notes has {len(notes)} characters, at most {MAX_NOTES_CHARS}")
        slides.append(Slide(cell_text(raw.get("title")).strip()[:300], tuple(bullets), columns, rows, notes))
    return slides


# --- Geometry -----------------------------------------------------------------------------------
# python-pptx's template is 4:3 (9144000 EMU wide); decks are 16:9, as phones and projectors show
# them: same height, a third wider.
SLIDE_W, SLIDE_H = 12192000, 6858000
TEMPLATE_W = 9144000
EMU_PER_PT = 12700
GAP = 137160  # 0.15 in between the bullets and a table below them

# Text is measured with Helvetica's metrics, widened: a viewer without Calibri (the theme font)
# draws DejaVu Sans, about 12 % wider; in PowerPoint the text then has room to spare.
WIDTH_FACTOR = 1.15
LINE = 1.22  # line height as a multiple of the font size (Calibri 1.22, DejaVu Sans 1.16)
INSET_X, INSET_Y = 91440 / EMU_PER_PT, 45720 / EMU_PER_PT  # default text-frame insets, in points
BULLET_MARGIN = {0: 342900 / EMU_PER_PT, 1: 742950 / EMU_PER_PT}  # master body style marL

TITLE_SIZES = (40, 36, 32, 28, 24, 20, 18, 16, 14)
SUBTITLE_SIZES = (28, 24, 20, 18, 16, 14, 12)
BODY_SIZES = (28, 24, 22, 20, 18, 16)
SPLIT_SIZE = 20  # bullets that fit at no size of BODY_SIZES are split so each slide reads at this size

CONTINUED = {"fr": "(suite)", "en": "(continued)"}

Box = tuple[int, int, int, int]  # left, top, width, height in EMU


def _width_pt(text: str, size: float, bold: bool = False) -> float:
    from reportlab.pdfbase.pdfmetrics import stringWidth

    return float(stringWidth(text, "Helvetica-Bold" if bold else "Helvetica", size)) * WIDTH_FACTOR


def _lines(text: str, size: float, width_pt: float, bold: bool = False) -> int:
    """Lines the text takes when wrapped at ordinary spaces (never at non-breaking ones)."""
    total = 0
    space = _width_pt(" ", size, bold)
    for part in text.split("\n"):
        lines, line_w = 1, 0.0
        for word in part.split(" "):
            w = _width_pt(word, size, bold)
            if line_w and line_w + space + w > width_pt:
                lines, line_w = lines + 1, w
            else:
                line_w += (space if line_w else 0.0) + w
            while line_w > width_pt:  # a word wider than the line is broken inside
                lines, line_w = lines + 1, line_w - width_pt
        total += lines
    return total


def _level_size(size: int, level: int) -> int:
    return size if level == 0 else size - 4


def _bullets_height(bullets: tuple[tuple[int, str], ...], size: int, width: int) -> int:
    """Height in EMU of the bullets at `size` in a frame `width` EMU wide (insets included)."""
    inner = width / EMU_PER_PT - 2 * INSET_X
    total = 2 * INSET_Y
    for level, text in bullets:
        s = _level_size(size, level)
        bold = "**" in text
        lines = _lines(plain(text), s, inner - BULLET_MARGIN[level], bold)
        total += (lines + 0.2) * s * LINE  # 0.2: the master style's space before each paragraph
    return int(total * EMU_PER_PT)


def _text_height(text: str, size: int, width: int) -> int:
    lines = _lines(text, size, width / EMU_PER_PT - 2 * INSET_X)
    return int((lines * size * LINE + 2 * INSET_Y) * EMU_PER_PT)


def _fit(height_of: Any, sizes: tuple[int, ...], height: int) -> int | None:
    """The largest size whose text is at most `height` EMU high, or None."""
    return next((s for s in sizes if height_of(s) <= height), None)


def _bullet_pages(
    bullets: tuple[tuple[int, str], ...], body: Box
) -> list[tuple[tuple[tuple[int, str], ...], int]]:
    """Bullets as (bullets, font size) per slide: all on one slide, shrunk down to the smallest
    readable size, or else continued on further slides."""
    if not bullets:
        return [((), BODY_SIZES[0])]
    width, height = body[2], body[3]
    size = _fit(lambda s: _bullets_height(bullets, s, width), BODY_SIZES, height)
    if size is not None:
        return [(bullets, size)]
    chunks: list[list[tuple[int, str]]] = [[]]
    for bullet in bullets:
        if chunks[-1] and _bullets_height((*chunks[-1], bullet), SPLIT_SIZE, width) > height:
            chunks.append([])
        chunks[-1].append(bullet)
    pages = []
    for chunk in chunks:
        fitted = _fit(lambda s, c=tuple(chunk): _bullets_height(c, s, width), BODY_SIZES, height)
        pages.append((tuple(chunk), fitted or BODY_SIZES[-1]))
    return pages


# --- Tables ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TablePlan:
    size: int  # font size, points
    widths: tuple[int, ...]  # column widths, EMU
    heights: tuple[int, ...]  # row heights, EMU: the header first when there is one
    right: frozenset[int]  # right-aligned columns
    header: bool


def _column_widths(natural: list[float], total: int) -> tuple[int, ...]:
    """Columns narrower than a fair share keep their width; the others share what is left in
    proportion to their text (so a long label wraps rather than every amount)."""
    widths: dict[int, float] = {}
    rest = list(range(len(natural)))
    room = float(total)
    while rest:
        share = room / len(rest)
        small = [c for c in rest if natural[c] <= share]
        if not small:
            weight = sum(natural[c] for c in rest) or 1.0
            for c in rest:
                widths[c] = room * natural[c] / weight
            break
        for c in small:
            widths[c] = natural[c]
            room -= natural[c]
            rest.remove(c)
    if not rest:  # everything fits: spread the spare width evenly
        spare = (total - sum(widths.values())) / len(natural)
        widths = {c: w + spare for c, w in widths.items()}
    out = [int(widths[c]) for c in range(len(natural))]
    out[-1] += total - sum(out)
    return tuple(out)


def table_sizes(ncols: int) -> tuple[int, ...]:
    """Font sizes to try for a table, largest first; the last is the one a long table is split at."""
    largest = 18 if ncols <= 3 else 16 if ncols <= 5 else 14 if ncols <= 7 else 12
    smallest = 14 if ncols <= 4 else 12 if ncols <= 7 else 10
    return tuple(range(largest, smallest - 1, -2))


def plan_table(
    columns: tuple[str, ...], rows: tuple[tuple[str, ...], ...], width: int, size: int
) -> TablePlan:
    ncols = max([len(columns), *(len(r) for r in rows)])
    all_rows = ([columns] if columns else []) + list(rows)
    pad = 2 * INSET_X
    natural = []
    for c in range(ncols):
        cells = [
            (plain(r[c]) if c < len(r) else "", bool(columns) and n == 0) for n, r in enumerate(all_rows)
        ]
        longest = max(_width_pt(line, size, b) for t, b in cells for line in t.split("\n"))
        natural.append((longest + pad + 2) * EMU_PER_PT)
    widths = _column_widths(natural, width)
    heights = []
    for n, r in enumerate(all_rows):
        bold = bool(columns) and n == 0
        lines = max(
            _lines(plain(r[c]) if c < len(r) else "", size, widths[c] / EMU_PER_PT - pad, bold)
            for c in range(ncols)
        )
        heights.append(int((lines * size * LINE + 2 * INSET_Y + 2) * EMU_PER_PT))
    # Amounts right-aligned, as figures are read; codes, years and labels stay left (content.py).
    right = frozenset(i for i, kind in enumerate(column_types(columns, rows)) if kind in NUMERIC_KINDS)
    return TablePlan(size, widths, tuple(heights), right, bool(columns))


def _row_chunks(plan: TablePlan, room: int) -> list[list[int]]:
    """Body row indexes per slide: each slide repeats the header, then holds as many rows as fit,
    the rows shared evenly between the slides (no last slide with a lone row)."""
    header = plan.heights[0] if plan.header else 0
    body = plan.heights[1:] if plan.header else plan.heights
    chunks: list[list[int]] = [[]]
    used = header
    for i, h in enumerate(body):
        if chunks[-1] and used + h > room:
            chunks.append([])
            used = header
        chunks[-1].append(i)
        used += h
    if len(chunks) > 1:
        per = -(-len(body) // len(chunks))
        even = [list(range(i, min(i + per, len(body)))) for i in range(0, len(body), per)]
        if len(even) == len(chunks) and all(header + sum(body[i] for i in c) <= room for c in even):
            return even
    return chunks


# --- Building -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    """One slide as laid out: its title, bullets at their size, and table rows (indexes)."""

    title: str
    bullets: tuple[tuple[int, str], ...]
    size: int
    rows: tuple[int, ...] | None  # None: no table on this slide
    notes: str


def layout_pages(content: Slide, body: Box, lang: str = "fr") -> tuple[list[Page], TablePlan | None]:
    """The slides one content slide needs: bullets shrunk or continued, then the table (shrunk
    to fit under the bullets or on its own slide, or else split into slides that each repeat its
    header). Returns them with the table's layout."""
    more = f"{content.title} {CONTINUED[language_of(lang)]}".strip()
    pages = [
        Page(content.title if n == 0 else more, chunk, size, None, content.notes if n == 0 else "")
        for n, (chunk, size) in enumerate(_bullet_pages(content.bullets, body))
    ]
    if not (content.columns or content.rows):
        return pages, None
    room, last = body[3], pages[-1]
    sizes = table_sizes(max([len(content.columns), *(len(r) for r in content.rows)]))
    plans = [plan_table(content.columns, content.rows, body[2], size) for size in sizes]
    for plan in plans if last.bullets else ():
        # A table that fits on one slide goes under the bullets if they can be made small enough.
        space = room - sum(plan.heights) - GAP
        size = _fit(lambda s: _bullets_height(last.bullets, s, body[2]), BODY_SIZES, space)
        if size is not None and size >= min(last.size, SPLIT_SIZE):
            rows = tuple(range(len(plan.heights) - plan.header))
            pages[-1] = Page(last.title, last.bullets, size, rows, last.notes)
            return pages, plan
    plan = next((p for p in plans if sum(p.heights) <= room), plans[-1])
    chunks = _row_chunks(plan, room)
    if not last.bullets:  # a slide with no bullets takes the table's first part itself
        pages[-1] = Page(last.title, (), last.size, tuple(chunks.pop(0)), last.notes)
    return pages + [Page(more, (), BODY_SIZES[0], tuple(c), "") for c in chunks], plan


def _place(shape: Any, box: Box) -> None:
    # All four, always: setting only some makes python-pptx write zeros for the others.
    shape.left, shape.top, shape.width, shape.height = (int(v) for v in box)


def _box(shape: Any) -> Box:
    return (int(shape.left), int(shape.top), int(shape.width), int(shape.height))


def _widen(prs: Any) -> None:
    """16:9 slides, with the master's and layouts' placeholders stretched to the new width, and a
    slide-size record that says so (no 4:3 `type` left on a 16:9 size)."""
    prs.slide_width, prs.slide_height = SLIDE_W, SLIDE_H
    size = prs._element.find(qn("p:sldSz"))
    if size is not None and "type" in size.attrib:
        del size.attrib["type"]
    scale = SLIDE_W / TEMPLATE_W
    for holder in (prs.slide_master, *prs.slide_layouts):
        for shape in holder.shapes:
            if shape._element.xfrm is not None:  # the others inherit from the master
                shape.left = int(shape.left * scale)
                shape.width = int(shape.width * scale)


def _set_text(shape: Any, text: str, size: int, lang: str) -> None:
    from pptx.enum.text import MSO_AUTO_SIZE
    from pptx.util import Pt

    frame = shape.text_frame
    frame.word_wrap = True
    frame.auto_size = MSO_AUTO_SIZE.NONE  # the size is computed here; no viewer-side shrinking
    frame.text = text
    for paragraph in frame.paragraphs:
        for run in paragraph.runs:
            run.font.size = Pt(size)
            _lang(run, lang)


def _lang(run: Any, lang: str) -> None:
    run.font._rPr.set("lang", language_tag(lang))


def _add_runs(paragraph: Any, text: str, size: int, lang: str) -> None:
    from pptx.util import Pt

    for run_text, bold, italic in inline_runs(text):
        run = paragraph.add_run()
        run.text = run_text
        run.font.size = Pt(size)
        _lang(run, lang)
        if bold:
            run.font.bold = True
        if italic:
            run.font.italic = True


def _title(slide: Any, layout_title: Any, text: str, sizes: tuple[int, ...], lang: str) -> None:
    box = _box(layout_title)
    size = _fit(lambda s: _text_height(text, s, box[2]), sizes, box[3]) or sizes[-1]
    _place(slide.shapes.title, box)
    _set_text(slide.shapes.title, text, size, lang)


def _title_slide(prs: Any, title: str, subtitle: str, lang: str) -> None:
    layout = prs.slide_layouts[0]
    slide = prs.slides.add_slide(layout)
    _title(slide, layout.placeholders[0], title, (44, *TITLE_SIZES), lang)
    sub, box = slide.placeholders[1], _box(layout.placeholders[1])
    _place(sub, box)
    size = _fit(lambda s: _text_height(subtitle, s, box[2]), SUBTITLE_SIZES, box[3]) or SUBTITLE_SIZES[-1]
    _set_text(sub, subtitle, size, lang)


def build_pptx(title: str, subtitle: str, slides: list[Slide], lang: str = "fr") -> bytes:
    from pptx import Presentation

    prs = Presentation()
    _widen(prs)
    prs.core_properties.title = title
    prs.core_properties.author = "Deblo"
    prs.core_properties.language = language_tag(lang)
    _title_slide(prs, title, subtitle, lang)
    content_layout, title_only = prs.slide_layouts[1], prs.slide_layouts[5]
    body = _box(content_layout.placeholders[1])
    for content in slides:
        pages, plan = layout_pages(content, body, lang)
        for page in pages:
            _add_page(prs, page, content, plan, content_layout if page.bullets else title_only, body, lang)
    out = io.BytesIO()
    prs.save(out)
    return out.getvalue()


def _add_page(
    prs: Any, page: Page, content: Slide, plan: TablePlan | None, layout: Any, body: Box, lang: str
) -> None:
    slide = prs.slides.add_slide(layout)
    _title(slide, layout.placeholders[0], page.title, TITLE_SIZES, lang)
    top = body[1]
    if page.bullets:
        holder = next(p for p in slide.placeholders if p.placeholder_format.idx == 1)
        height = body[3]
        if page.rows is not None:  # the frame ends where its text does, and the table follows
            height = min(body[3], _bullets_height(page.bullets, page.size, body[2]))
            top = body[1] + height + GAP
        _place(holder, (body[0], body[1], body[2], height))
        _bullets(holder, page.bullets, page.size, lang)
    if plan is not None and page.rows is not None:
        _add_table(slide, content, plan, page.rows, (body[0], top), lang)
    if page.notes:
        slide.notes_slide.notes_text_frame.text = page.notes


def _bullets(holder: Any, bullets: tuple[tuple[int, str], ...], size: int, lang: str) -> None:
    from pptx.enum.text import MSO_AUTO_SIZE

    frame = holder.text_frame
    frame.word_wrap = True
    frame.auto_size = MSO_AUTO_SIZE.NONE
    for n, (level, text) in enumerate(bullets):
        paragraph = frame.paragraphs[0] if n == 0 else frame.add_paragraph()
        paragraph.level = level
        _add_runs(paragraph, text, _level_size(size, level), lang)


def _add_table(
    slide: Any, content: Slide, plan: TablePlan, rows: tuple[int, ...], at: tuple[int, int], lang: str
) -> None:
    from pptx.enum.text import PP_ALIGN

    shown = ([content.columns] if plan.header else []) + [content.rows[i] for i in rows]
    heights = ([plan.heights[0]] if plan.header else []) + [plan.heights[i + plan.header] for i in rows]
    frame = slide.shapes.add_table(len(shown), len(plan.widths), at[0], at[1], sum(plan.widths), sum(heights))
    table = frame.table
    for c, w in enumerate(plan.widths):
        table.columns[c].width = w
    for r, (values, h) in enumerate(zip(shown, heights, strict=True)):
        table.rows[r].height = h
        for c in range(len(plan.widths)):
            frame_text = table.cell(r, c).text_frame
            for n, line in enumerate((values[c] if c < len(values) else "").split("\n")):
                paragraph = frame_text.paragraphs[0] if n == 0 else frame_text.add_paragraph()
                if c in plan.right:
                    paragraph.alignment = PP_ALIGN.RIGHT
                _add_runs(paragraph, line, plan.size, lang)
