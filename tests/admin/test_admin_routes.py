"""Every route under /admin is behind the dashboard's one hook (`signed_in` of bot/web/admin/pages.py:
a session or 303 to the login, the CSRF token on a POST or 403, the viewer handed to the handler),
but for a short list named here. Read from the routes the app mounts (bot.cli.registered_routes)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bot.cli import registered_routes
from bot.web.admin.pages import SIGNED_IN

# The handlers that need no session, and why.
NO_SESSION_NEEDED = {
    "bot.web.admin.pages.login_form": "the login form (a viewer with a session is sent on to /admin/)",
    "bot.web.admin.pages.login_post": "the login itself, checked by its own CSRF token (from a cookie)",
    "bot.web.admin.pages.to_dashboard": "/admin's redirect to /admin/, which is behind the hook",
}


def _admin_routes() -> list[tuple[str, str, Any]]:
    """(method, path, handler) of each route the app serves under /admin."""
    app = web.Application()
    app.add_routes(registered_routes())
    found = []
    for route in app.router.routes():
        path = route.resource.canonical if route.resource is not None else ""
        if path == "/admin" or path.startswith("/admin/"):
            found.append((route.method, path, route.handler))
    return found


def _name(handler: Any) -> str:
    return f"{handler.__module__}.{handler.__qualname__}"


def test_every_dashboard_route_but_the_login_is_behind_the_hook() -> None:
    routes = _admin_routes()
    assert {m for m, _path, _h in routes} >= {"GET", "POST"}
    open_routes = [f"{method} {path}: {_name(handler)}" for method, path, handler in routes
                   if not getattr(handler, SIGNED_IN, False) and _name(handler) not in NO_SESSION_NEEDED]
    assert not open_routes, "put these behind pages.signed_in (or name them here):\n" + "\n".join(open_routes)


def test_the_list_of_open_routes_names_routes_that_are_open() -> None:
    """No stale name: each handler listed serves a route, outside the hook."""
    unhooked = {_name(h) for _m, _path, h in _admin_routes() if not getattr(h, SIGNED_IN, False)}
    assert unhooked == set(NO_SESSION_NEEDED)
