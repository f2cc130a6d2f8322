"""The web application's keys: where a route finds the process's services. Apart from bot.channel.web,
which builds the application, so that the pages mounted on it (bot.web) reach the services without
importing the module that mounts them."""

from __future__ import annotations

from aiohttp import web

from bot.services import Services

__all__ = ["SERVICES", "services_of"]

SERVICES: web.AppKey[Services] = web.AppKey("services", Services)


def services_of(request: web.Request) -> Services:
    return request.app[SERVICES]
