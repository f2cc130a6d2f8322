"""list_user_files: the user's uploaded and generated files, newest first, with their ids: each
with its name, kind (« photo », « pdf », « word »…), date, size and its first words, so the model
and the person tell two files apart without opening them. The files of the classes the student is
in now come with them, each marked « (classe 6e A) » and read-only (bot.school.class_files)."""

from __future__ import annotations

from typing import Any

from bot import library, school
from bot.agent import vision
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult
from bot.documents.extract import kind_of
from tools.modes import EVERY_PROFILE

NAME = "list_user_files"
MAX_LIMIT = 50
FIRST_WORDS = 12
_KINDS = {"pdf": "pdf", "docx": "word", "xlsx": "excel", "pptx": "powerpoint", "html": "page web",
          "text": "texte"}


def _kind(name: str, mime: str) -> str:
    if vision.is_image(mime):
        return "photo"
    if mime.startswith(("audio/", "video/")):
        return mime.split("/")[0]
    return _KINDS.get(kind_of(name, mime), "fichier")


def _first_words(text: str | None) -> str:
    words = (text or "").split()
    return " ".join(words[:FIRST_WORDS]) + ("…" if len(words) > FIRST_WORDS else "")


def _name(row: Any, classes: dict[int, str], language: str) -> str:
    """A class's file marked « (classe 6e A) », so the model and the student tell it from their own."""
    cohort = classes.get(row.cohort_id) if row.cohort_id is not None else None
    return f"{row.name} {school.class_label(cohort, language)}" if cohort is not None else str(row.name)


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    try:
        limit = min(max(int(args.get("limit") or 20), 1), MAX_LIMIT)
        offset = max(int(args.get("offset") or 0), 0)
    except (TypeError, ValueError):
        limit, offset = 20, 0
    async with ctx.reading() as db:
        classes = ctx.extra.get(school.TURN_CLASSES)
        if classes is None:
            classes = await school.student_classes(db, ctx.user_id)
        rows, total = await library.list_files_counted(db, ctx.user_id, limit=limit, offset=offset,
                                                       cohorts=list(classes))
    return {
        "success": True,
        "total": total,
        "files": [
            {
                "id": row.id,
                "name": _name(row, classes, ctx.language),
                "kind": _kind(row.name, row.mime),
                "mime": row.mime,
                "size": row.size,
                "origin": row.origin,
                "created_at": row.created_at.isoformat(timespec="seconds"),
                "has_text": bool(row.text),
                **({"first_words": _first_words(row.text)} if row.text else {}),
                **({"read_only": True} if row.cohort_id is not None else {}),
            }
            for row in rows
        ],
    }


TOOL = Tool(
    name=NAME,
    description="The user's and class files, newest first, ids.",
    parameters={
        "type": "object",
        "properties": {"limit": {"type": "integer"}, "offset": {"type": "integer"}},
    },
    modes=EVERY_PROFILE,
    step=StepText("🗂️", "Liste des fichiers", "Listing your files"),
    run=run,
    reads_only=True,
)
