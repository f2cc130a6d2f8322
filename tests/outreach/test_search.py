"""web_search against local servers speaking Tavily's POST /search and SearXNG's JSON API."""

from __future__ import annotations

import asyncio
import json

from aiohttp import web

from tests.support.outreach import add_user, tool_ctx
from tests.support.ports import free_port
from tools import for_mode
from tools.web_search import MAX_CONTENT
from tools.web_search import TOOL as SEARCH


def _tavily(app: web.Application, _requests: list) -> None:
    async def search(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != "Bearer tvly-test":
            return web.json_response({"detail": {"error": "Unauthorized: missing or invalid API key."}},
                                     status=401)
        body = await request.json()
        if body["query"] == "lent":
            await asyncio.sleep(3)
        results = [{"title": f"Résultat {i}", "url": f"https://site{i}.ci/page",
                    "content": f"Contenu {i} " + "SYSCOHADA révisé " * 300, "score": 0.9 - i / 10,
                    "raw_content": None} for i in range(8)]
        return web.json_response({"query": body["query"], "follow_up_questions": None, "answer": None,
                                  "images": [], "results": results, "response_time": 0.42})

    app.router.add_post("/search", search)


def _searxng(app: web.Application, _requests: list) -> None:
    async def search(request: web.Request) -> web.Response:
        if request.query.get("format") != "json":
            return web.Response(status=403, text="Forbidden")
        q = request.query["q"]
        return web.json_response({
            "query": q, "number_of_results": 0,
            "results": [{"url": f"https://wiki.ci/{i}", "title": f"{q} {i}", "content": f"extrait {i}",
                         "engine": "duckduckgo", "engines": ["duckduckgo"], "positions": [i + 1],
                         "score": 1.0, "category": "general"} for i in range(7)],
            "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []})

    app.router.add_get("/search", search)


async def _search(services, query: str, language: str = "fr") -> dict:
    user = await add_user(services, f"+22507{abs(hash(query)) % 10**8:08d}")
    return await SEARCH.run(tool_ctx(services, user, language=language), {"query": query})


async def test_tavily_format_and_caps(make_services, http_stub):
    tavily = await http_stub(_tavily)
    services = await make_services(TAVILY_API_KEY="tvly-test", TAVILY_BASE_URL=tavily.base_url)
    result = await _search(services, "bilan SYSCOHADA 2024")
    assert result["success"] is True and result["provider"] == "tavily"
    assert len(result["results"]) == 5
    assert [r["title"] for r in result["results"]] == [f"Résultat {i}" for i in range(5)]
    assert all(len(r["content"]) <= MAX_CONTENT for r in result["results"])
    assert result["results"][0]["content"].startswith("Contenu 0 SYSCOHADA")
    sent = json.loads(tavily.requests[0]["body"])
    assert sent["query"] == "bilan SYSCOHADA 2024" and sent["max_results"] == 5
    assert tavily.requests[0]["path_qs"] == "/search"


async def test_tavily_rejection_is_explained(make_services, http_stub):
    tavily = await http_stub(_tavily)
    services = await make_services(TAVILY_API_KEY="tvly-wrong", TAVILY_BASE_URL=tavily.base_url)
    result = await _search(services, "x")
    assert result["success"] is False
    assert "401" in result["error"] and "invalid API key" in result["error"]


async def test_tavily_down_or_slow(make_services, http_stub):
    dead = await make_services(TAVILY_API_KEY="tvly-test", TAVILY_BASE_URL=f"http://127.0.0.1:{free_port()}")
    result = await _search(dead, "x")
    assert result["success"] is False and "cannot be reached" in result["error"]
    tavily = await http_stub(_tavily)
    slow = await make_services(TAVILY_API_KEY="tvly-test", TAVILY_BASE_URL=tavily.base_url,
                               WEB_SEARCH_TIMEOUT_S="0.5")
    result = await _search(slow, "lent")
    assert result["success"] is False and "in time" in result["error"]


async def test_searxng_json_api(make_services, http_stub):
    searx = await http_stub(_searxng)
    services = await make_services(SEARXNG_URL=searx.base_url)
    result = await _search(services, "fractions cm2", language="en")
    assert result["success"] is True and result["provider"] == "searxng"
    assert len(result["results"]) == 5 and result["results"][0]["url"] == "https://wiki.ci/0"
    path = searx.requests[0]["path_qs"]
    assert path.startswith("/search?") and "format=json" in path and "language=en" in path


async def test_searxng_takes_over_when_tavily_fails(make_services, http_stub):
    searx = await http_stub(_searxng)
    services = await make_services(TAVILY_API_KEY="tvly-test", TAVILY_BASE_URL=f"http://127.0.0.1:{free_port()}",
                                   SEARXNG_URL=searx.base_url)
    result = await _search(services, "x")
    assert result["success"] is True and result["provider"] == "searxng"


async def test_searxng_without_json_format(make_services, http_stub):
    def html_only(app: web.Application, _r: list) -> None:
        app.router.add_get("/search", lambda _req: _forbidden())

    async def _forbidden() -> web.Response:
        return web.Response(status=403, text="Forbidden")

    searx = await http_stub(html_only)
    services = await make_services(SEARXNG_URL=searx.base_url)
    result = await _search(services, "x")
    assert result["success"] is False and "json" in result["error"]


async def test_not_offered_without_a_provider(make_services):
    services = await make_services()
    assert SEARCH.unavailable(services.settings)
    assert "web_search" not in {t.name for t in for_mode("child", services.settings)}
    configured = await make_services(SEARXNG_URL="http://127.0.0.1:1")
    assert "web_search" in {t.name for t in for_mode("child", configured.settings)}
    assert "web_search" not in {t.name for t in for_mode("guest", configured.settings)}


async def test_empty_query(make_services):
    services = await make_services(SEARXNG_URL="http://127.0.0.1:1")
    result = await _search(services, "   ")
    assert result["success"] is False and "query" in result["error"]
