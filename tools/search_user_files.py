"""search_user_files: the user's files best matching a question, by their words and their meaning,
each with the page or sheet and a snippet (given to the model as third-party data, like the files'
text). Nothing rather than noise: a file matched by its name alone, or by a meaning score under
the threshold, is no result, and an empty search says « aucun fichier ne correspond ». The files of
the classes the student is in now are searched too, marked « (classe 6e A) »."""

from __future__ import annotations

from typing import Any

from bot import library, school
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from tools.modes import EVERY_PROFILE

NAME = "search_user_files"
MAX_RESULTS = 10
NO_MATCH = "aucun fichier ne correspond"


def _name(hit: library.SearchHit, classes: dict[int, str], language: str) -> str:
    cohort = classes.get(hit.cohort_id) if hit.cohort_id is not None else None
    return f"{hit.name} {school.class_label(cohort, language)}" if cohort is not None else hit.name


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    query = args.get("query")
    if not isinstance(query, str) or not library.query_terms(query):
        return tool_error("query must contain words to look for")
    try:
        limit = min(max(int(args.get("limit") or 5), 1), MAX_RESULTS)
    except (TypeError, ValueError):
        limit = 5
    # The user's chunks not embedded yet (a file just sent, beyond its first chunks) first.
    await library.embed_pending(ctx.services, user_id=ctx.user_id)
    async with ctx.services.sessions() as db:
        classes = await school.student_classes(db, ctx.user_id)
        hits = await library.search_files(db, ctx.user_id, query, limit=limit, cohorts=list(classes),
                                          embedder=library.embedder_for(ctx.services))
    if not hits:  # said plainly: no near miss for the model to dress up as an answer
        return {"success": True, "query": query, "results": [], "message": NO_MATCH}
    return {
        "success": True,
        "query": query,
        "results": [
            {
                "file_id": h.file_id,
                "name": _name(h, classes, ctx.language),
                "mime": h.mime,
                **({"where": h.locator} if h.locator else {}),
                "snippet": h.snippet,
                "score": round(h.score, 4),
            }
            for h in hits
        ],
    }


TOOL = Tool(
    name=NAME,
    description="Search the user's and class files: best matches, snippets.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
    modes=EVERY_PROFILE,
    step=StepText("🔍", "Recherche dans les fichiers", "Searching your files"),
    run=run,
    untrusted_source="file",
)
