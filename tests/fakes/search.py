"""A local search provider speaking Tavily's `POST /search`, slow on purpose: a background job's
steps then last long enough for a process to be stopped or killed in the middle of one. It
counts what it is asked, so a test can tell a search finished from one run again."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from aiohttp import web


@dataclass
class SlowSearch:
    delay_s: float
    url: str = ""
    count: int = 0
    runner: web.AppRunner | None = None

    async def _search(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.count += 1
        await asyncio.sleep(self.delay_s)
        results = [{"title": f"Norme {body['query']}", "url": "https://ohada.example/norme",
                    "content": "Le bilan SYSCOHADA révisé comprend l'actif et le passif.", "score": 0.9}]
        return web.json_response({"query": body["query"], "results": results, "answer": None,
                                  "images": [], "follow_up_questions": None, "response_time": self.delay_s})

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/search", self._search)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
