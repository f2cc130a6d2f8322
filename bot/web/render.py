"""Server-rendered pages: the HTML of every page the bot serves comes from bot.render (one Jinja2
environment, templates under `bot/templates/`), with the headers every such page carries (no
outside resources, nothing cached)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bot.render import render

__all__ = ["PAGE_HEADERS", "html_response", "render"]

# Everything a page shows is inline (styles and SVG charts) or from this origin: no script, no font,
# no image from elsewhere, and nothing kept by a shared phone's browser or a proxy.
PAGE_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                                "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def html_response(template: str, *, status: int = 200, headers: dict[str, str] | None = None,
                  **context: Any) -> web.Response:
    """A page as an aiohttp response with PAGE_HEADERS (and any `headers` on top)."""
    return web.Response(text=render(template, **context), status=status, content_type="text/html",
                        charset="utf-8", headers={**PAGE_HEADERS, **(headers or {})})
