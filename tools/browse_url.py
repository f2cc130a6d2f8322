"""browse_url: the readable text of a web page, at most 8,000 characters.

Through Jina Reader when JINA_API_KEY is set (it fetches the page on its side; the host is resolved
and checked here first, as for a direct fetch), otherwise a direct fetch by bot.agent.web_fetch, which
refuses private and reserved addresses at every hop, then readable text extraction. Either way
only http(s) URLs are taken and the result is capped. In a turn (bot.agent.untrusted), once the
model has read third-party text, only the addresses the user sent, the results of the searches the user
asked for in this turn and addresses on BROWSE_ALLOWED_HOSTS are opened, exactly as given, and at most
BROWSE_MAX_PER_TURN pages: a page cannot make the model carry the user's data out in an address it
composes or in the page's own links. Each refusal is said to the model, counted
(deblo_browse_refused_total) and logged with the host only (the address may carry the data).

A student (the child mode, but a parent) opens no page unless the operator set STUDENT_WEB_TOOLS: a
school's tutor keeps its pupils to their lessons. The tool stays in the child mode's set (the
modes' tool sets are the product's, and one schema for students and parents keeps the prompt's
prefix one for the mode); it refuses, saying so to the model, which tells the student.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import urlsplit

import httpx

from bot import metrics
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.agent.untrusted import TurnSources, UrlRefused, links_in_html, urls_in
from bot.agent.web_fetch import (
    Fetched,
    FetchFailed,
    FetchRefused,
    charset_of,
    check_public_url,
    fetch,
    readable_text,
)
from bot.config import Settings
from bot.storage.models import User
from tools.modes import EVERY_PROFILE

log = logging.getLogger(__name__)

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


def _page_links(fetched: Fetched) -> list[str]:
    return links_in_html(fetched.body.decode(charset_of(fetched.content_type) or "utf-8", errors="replace"),
                         fetched.url)


async def read_direct(settings: Settings, url: str, links: list[str] | None = None) -> tuple[str, str, str]:
    """`links`, when given, gets the targets of the page's links."""
    fetched = await fetch(url, settings)
    if fetched.status >= 400:
        raise FetchFailed(f"the site answered {fetched.status}")
    title, text = await asyncio.to_thread(readable_text, fetched)
    if links is not None:
        links.extend(await asyncio.to_thread(_page_links, fetched))
    return fetched.url, title, text


def _refused(exc: UrlRefused, url: str) -> ToolResult:
    metrics.BROWSE_REFUSED.labels(exc.reason).inc()
    try:
        host = (urlsplit(url).hostname or "?")[:100]
    except ValueError:
        host = "?"
    # The host only: the rest of the address may be the very data it was meant to carry out.
    log.warning("browse_url refused an address (%s) on %s", exc.reason, host,
                extra={"reason": exc.reason, "host": host})
    code = "too_many_pages" if exc.reason == "too_many_pages" else "url_not_allowed"
    return tool_error(str(exc), code=code, reason=exc.reason, refused=True)


def _allowed(turn: TurnSources, url: str, settings: Settings) -> tuple[str, str | None] | ToolResult:
    """(the URL to fetch, a note) when this turn may open `url`, else the refusal to return."""
    try:
        url, note = turn.check_url(url, settings.browse_allowed_hosts)
        turn.open_page(url, settings.browse_max_per_turn)
    except UrlRefused as exc:
        return _refused(exc, url)
    return url, note


async def student_refused(ctx: ToolContext) -> ToolResult | None:
    """The refusal for a student while STUDENT_WEB_TOOLS is off; None for anyone else."""
    if ctx.mode != "child" or ctx.services.settings.student_web_tools:
        return None
    async with ctx.services.sessions() as db:
        user = await db.get(User, ctx.user_id)
    if user is not None and user.role == "parent":
        return None
    metrics.BROWSE_REFUSED.labels("student").inc()
    return tool_error("Pages web fermées aux élèves : ce tuteur s'en tient aux cours (l'école peut les "
                      "ouvrir).\nWeb pages are closed to students: this tutor keeps to their lessons "
                      "(the school may open them). Answer from what you know, or ask the student to "
                      "paste the text.",
                      code="students_no_web", refused=True)


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    settings = ctx.services.settings
    url = str(args.get("url") or "").strip()
    if not url:
        return tool_error("url is required")
    refused = await student_refused(ctx)
    if refused is not None:
        return refused
    note = None
    if ctx.turn is not None:
        allowed = _allowed(ctx.turn, url, settings)
        if isinstance(allowed, dict):
            return allowed
        url, note = allowed
    links: list[str] = []
    budget = max(1.0, min(settings.limits.tool_timeout_s - 1.0, settings.browse_timeout_s * 2 + 5))
    notes: list[str] = []
    try:
        async with asyncio.timeout(budget):
            if settings.jina_api_key:
                # Resolved and checked as a direct fetch would be: Jina must not be sent inside either.
                await check_public_url(url, settings)
                try:
                    final, title, content = await read_with_jina(ctx.services.http, settings, url)
                except FetchFailed as exc:
                    notes.append(str(exc))
                    final, title, content = await read_direct(settings, url, links)
            else:
                final, title, content = await read_direct(settings, url, links)
    except FetchRefused as exc:
        return tool_error(f"refused: {exc}", refused=True)
    except FetchFailed as exc:
        return tool_error(f"the page could not be read: {'; '.join([*notes, str(exc)])}")
    except TimeoutError:
        return tool_error("the page took too long to load")
    content, truncated = _cap(content.strip())
    if not content:
        return tool_error("the page has no readable text")
    if ctx.turn is not None:  # Jina's markdown carries the links in the text
        ctx.turn.add_seen([final, *links, *urls_in(content)])
    result: ToolResult = {"success": True, "url": final, "title": title[:300], "content": content,
                          "truncated": truncated}
    return {**result, "note": note} if note else result


TOOL = Tool(
    name=NAME,
    description="A web page's main text.",
    parameters={"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
    modes=EVERY_PROFILE,
    step=StepText("🌍", "Lecture de la page web", "Reading the web page"),
    run=run,
    progress_note={"fr": "Je lis la page…", "en": "Reading the page…"},
    untrusted_source="web page",
)
