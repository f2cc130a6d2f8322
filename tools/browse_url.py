"""browse_url: the readable text of a web page, at most 8,000 characters.

Through Jina Reader when JINA_API_KEY is set (it fetches the page on its side), otherwise a direct
fetch by bot.web_fetch, which refuses private and reserved addresses at every hop, then readable
text extraction. Either way only http(s) URLs are taken and the result is capped.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from bot.config import Settings
from bot.toolspec import Tool, ToolContext, ToolResult, tool_error
from bot.web_fetch import FetchFailed, FetchRefused, fetch, readable_text, refuse_obviously_private
from tools.modes import modes_for

NAME = "browse_url"
MAX_CONTENT = 8000
TRUNCATED_MARK = "\n[...tronqué]"


def _cap(text: str) -> tuple[str, bool]:
    if len(text) <= MAX_CONTENT:
        return text, False
    return text[:MAX_CONTENT] + TRUNCATED_MARK, True


async def read_with_jina(http: httpx.AsyncClient, settings: Settings, url: str) -> tuple[str, str, str]:
    """(final url, title, content) from Jina Reader's JSON answer."""
    try:
        response = await http.get(
            f"{settings.jina_base_url}/{url}",
            headers={"Authorization": f"Bearer {settings.jina_api_key}", "Accept": "application/json",
                     "X-Timeout": str(int(settings.browse_timeout_s))},
            timeout=settings.browse_timeout_s * 1.5,
        )
    except httpx.TimeoutException:
        raise FetchFailed("the reader service did not answer in time") from None
    except httpx.HTTPError as exc:
        raise FetchFailed(f"the reader service cannot be reached ({type(exc).__name__})") from None
    try:
        payload = response.json()
    except ValueError:
        payload = None
    data = payload.get("data") if isinstance(payload, dict) else None
    if response.status_code != 200 or not isinstance(data, dict):
        detail = ""
        if isinstance(payload, dict):
            detail = str(payload.get("readableMessage") or payload.get("message") or "")[:200]
        suffix = f": {detail}" if detail else ""
        raise FetchFailed(f"the reader service answered {response.status_code}{suffix}")
    return str(data.get("url") or url), str(data.get("title") or ""), str(data.get("content") or "")


async def read_direct(settings: Settings, url: str) -> tuple[str, str, str]:
    fetched = await fetch(url, settings)
    if fetched.status >= 400:
        raise FetchFailed(f"the site answered {fetched.status}")
    title, text = await asyncio.to_thread(readable_text, fetched)
    return fetched.url, title, text


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    settings = ctx.services.settings
    url = str(args.get("url") or "").strip()
    if not url:
        return tool_error("url is required")
    budget = max(1.0, min(settings.limits.tool_timeout_s - 1.0, settings.browse_timeout_s * 2 + 5))
    notes: list[str] = []
    try:
        async with asyncio.timeout(budget):
            if settings.jina_api_key:
                refuse_obviously_private(url)
                try:
                    final, title, content = await read_with_jina(ctx.services.http, settings, url)
                except FetchFailed as exc:
                    notes.append(str(exc))
                    final, title, content = await read_direct(settings, url)
            else:
                final, title, content = await read_direct(settings, url)
    except FetchRefused as exc:
        return tool_error(f"refused: {exc}", refused=True)
    except FetchFailed as exc:
        return tool_error(f"the page could not be read: {'; '.join([*notes, str(exc)])}")
    except TimeoutError:
        return tool_error("the page took too long to load")
    content, truncated = _cap(content.strip())
    if not content:
        return tool_error("the page has no readable text")
    return {"success": True, "url": final, "title": title[:300], "content": content, "truncated": truncated}


TOOL = Tool(
    name=NAME,
    description=(
        "Read a web page (http or https URL) and get its main text, up to 8,000 characters. Use it on "
        "a result of web_search or a link the user sent."
    ),
    parameters={
        "type": "object",
        "properties": {"url": {"type": "string", "description": "The page's address, http(s)://…"}},
        "required": ["url"],
        "additionalProperties": False,
    },
    modes=modes_for(NAME),
    run=run,
    progress_note={"fr": "Je lis la page…", "en": "Reading the page…"},
)
