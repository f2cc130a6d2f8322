"""Server-rendered pages: one Jinja2 environment with autoescaping for every HTML page the bot serves
(the progress page, the dashboard), templates under `templates/`, and the headers every such page
carries (no outside resources, nothing cached)."""

from __future__ import annotations

from typing import Any

import jinja2
from aiohttp import web

__all__ = ["PAGE_HEADERS", "html_response", "render"]

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("bot.web", "templates"),
    autoescape=jinja2.select_autoescape(("html", "svg", "xml"), default=True),
    undefined=jinja2.StrictUndefined,  # a missing value is a bug, not an empty cell
    trim_blocks=True,
    lstrip_blocks=True,
)

# Everything a page shows is inline (styles and SVG charts) or from this origin: no script, no font,
# no image from elsewhere, and nothing kept by a shared phone's browser or a proxy.
PAGE_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                                "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def render(template: str, **context: Any) -> str:
    """The named template filled with `context` (every value escaped unless marked safe)."""
    return _ENV.get_template(template).render(**context)


def html_response(template: str, *, status: int = 200, headers: dict[str, str] | None = None,
                  **context: Any) -> web.Response:
    """A page as an aiohttp response with PAGE_HEADERS (and any `headers` on top)."""
    return web.Response(text=render(template, **context), status=status, content_type="text/html",
                        charset="utf-8", headers={**PAGE_HEADERS, **(headers or {})})
