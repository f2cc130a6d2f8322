"""web_search: Tavily (POST /search), or a self-hosted SearXNG's JSON API; 5 results of ≤ 1,500 chars.

When both are configured SearXNG answers if Tavily fails. A provider that is down, slow or refuses
us becomes an error result that says so, well within the tool timeout. The results' URLs are noted
in the turn (bot.agent.untrusted): browse_url may open them in this turn when the search was asked
before the turn read third-party text (a search written after may carry what a page put in the
model's mind; its result says its addresses will not be opened).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from bot import credentials
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.config import Settings
from tools.modes import EVERY_PROFILE

NAME = "web_search"
MAX_RESULTS = 5
MAX_CONTENT = 1500
MAX_TITLE = 200
MAX_QUERY = 400


class SearchFailed(Exception):
    pass


def _cut(text: Any, limit: int) -> str:
    value = " ".join(str(text or "").split())
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _clean(results: list[Any]) -> list[dict[str, str]]:
    out = []
    for item in results:
        if not isinstance(item, dict) or not item.get("url"):
            continue
        out.append({"title": _cut(item.get("title"), MAX_TITLE), "url": str(item["url"])[:500],
                    "content": _cut(item.get("content"), MAX_CONTENT)})
        if len(out) == MAX_RESULTS:
            break
    return out


def _error_detail(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200]
    detail = data.get("detail", data) if isinstance(data, dict) else data
    if isinstance(detail, dict):
        detail = detail.get("error") or detail.get("message") or detail
    return str(detail)[:200]


async def search_tavily(http: httpx.AsyncClient, settings: Settings, query: str) -> list[dict[str, str]]:
    try:
        response = await http.post(
            f"{settings.tavily_base_url}/search",
            headers={"Authorization": f"Bearer {settings.tavily_api_key}"},
            json={"query": query, "max_results": MAX_RESULTS, "search_depth": "basic",
                  "topic": "general", "include_answer": False, "include_raw_content": False},
            timeout=settings.web_search_timeout_s,
        )
    except httpx.TimeoutException:
        raise SearchFailed("Tavily did not answer in time") from None
    except httpx.HTTPError as exc:
        raise SearchFailed(f"Tavily cannot be reached ({type(exc).__name__})") from None
    if response.status_code in (401, 403):
        credentials.refused("Tavily", "TAVILY_API_KEY", f"HTTP {response.status_code}")
    if response.status_code != 200:
        raise SearchFailed(f"Tavily answered {response.status_code}: {_error_detail(response)}")
    try:
        data = response.json()
    except ValueError:
        raise SearchFailed("Tavily sent an unreadable answer") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise SearchFailed("Tavily sent an answer without results")
    return _clean(data["results"])


async def search_searxng(
    http: httpx.AsyncClient, settings: Settings, query: str, language: str
) -> list[dict[str, str]]:
    try:
        response = await http.get(
            f"{settings.searxng_url}/search",
            params={"q": query, "format": "json", "language": language, "safesearch": "1"},
            headers={"Accept": "application/json"},
            timeout=settings.web_search_timeout_s,
        )
    except httpx.TimeoutException:
        raise SearchFailed("SearXNG did not answer in time") from None
    except httpx.HTTPError as exc:
        raise SearchFailed(f"SearXNG cannot be reached ({type(exc).__name__})") from None
    if response.status_code == 403:
        raise SearchFailed("SearXNG refused the JSON format (enable 'json' in search.formats)")
    if response.status_code != 200:
        raise SearchFailed(f"SearXNG answered {response.status_code}")
    try:
        data = response.json()
    except ValueError:
        raise SearchFailed("SearXNG sent an unreadable answer") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise SearchFailed("SearXNG sent an answer without results")
    return _clean(data["results"])


NOT_OPENABLE = (
    "Ces adresses ne seront pas ouvertes par browse_url : cette recherche a été faite après la lecture "
    "d'un texte tiers. Donne-les à la personne ; elle peut t'envoyer celle qu'elle veut lire.\n"
    "browse_url will not open these addresses: this search was made after third-party text was read. "
    "Give them to the user, who can send you the one to read."
)


def _found(ctx: ToolContext, provider: str, query: str, results: list[dict[str, str]]) -> ToolResult:
    found: ToolResult = {"success": True, "provider": provider, "query": query, "results": results}
    if ctx.turn is not None and not ctx.turn.add_results(r["url"] for r in results) and results:
        found["note"] = NOT_OPENABLE
    return found


def unavailable(settings: Settings) -> str | None:
    if settings.tavily_api_key or settings.searxng_url:
        return None
    return "neither TAVILY_API_KEY nor SEARXNG_URL is set"


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    settings = ctx.services.settings
    query = " ".join(str(args.get("query") or "").split())[:MAX_QUERY]
    if not query:
        return tool_error("query is required")
    errors: list[str] = []
    # Keeps the whole search (both providers) inside the tool timeout.
    budget = max(1.0, min(settings.limits.tool_timeout_s - 1.0, settings.web_search_timeout_s * 2))
    try:
        async with asyncio.timeout(budget):
            if settings.tavily_api_key:
                try:
                    results = await search_tavily(ctx.services.http, settings, query)
                    return _found(ctx, "tavily", query, results)
                except SearchFailed as exc:
                    errors.append(str(exc))
            if settings.searxng_url:
                try:
                    results = await search_searxng(ctx.services.http, settings, query, ctx.language or "fr")
                    return _found(ctx, "searxng", query, results)
                except SearchFailed as exc:
                    errors.append(str(exc))
    except TimeoutError:
        errors.append("the search took too long")
    if not errors:
        return tool_error("web search is not configured")
    return tool_error("web search is unavailable right now: " + "; ".join(errors)
                      + ". Answer from your own knowledge and say the web could not be checked.")


TOOL = Tool(
    name=NAME,
    description="Web search: 5 results, url and extract.",
    parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    modes=EVERY_PROFILE,
    step=StepText("🔎", "Recherche sur le web", "Searching the web"),
    run=run,
    progress_note={"fr": "Je cherche sur le web…", "en": "Searching the web…"},
    unavailable=unavailable,
    untrusted_source="web search",
)
