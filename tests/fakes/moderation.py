"""A local OpenAI-compatible moderation endpoint: `POST /moderations` (and `/v1/moderations`).

It speaks OpenAI's wire format: a JSON body with `input` (a string or a list of strings) and
`model`, a Bearer key, and the answer `{"id", "model", "results": [{"flagged", "categories",
"category_scores", "category_applied_input_types"}]}` with every category of omni-moderation
present. Tests say which inputs are flagged for which categories (`flag`), make it fail
(`status`), or hang (`hang_s`), and read what was received (`requests`).
"""

from __future__ import annotations

import asyncio
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

CATEGORIES = (
    "harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent",
    "self-harm", "self-harm/intent", "self-harm/instructions", "sexual", "sexual/minors", "violence",
    "violence/graphic",
)


@dataclass
class FakeModeration:
    key: str = "test-moderation-key"
    flags: dict[str, tuple[str, ...]] = field(default_factory=dict)  # words in the input → categories
    status: int = 200  # anything else: an OpenAI error body with this status
    hang_s: float = 0.0  # answers this late (a timeout)
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""
    _runner: web.AppRunner | None = None

    def flag(self, words: str, *categories: str) -> None:
        """An input containing `words` (case ignored) is flagged for `categories`."""
        unknown = set(categories) - set(CATEGORIES)
        assert not unknown, f"not a moderation category: {unknown}"
        self.flags[words.lower()] = categories

    def _result(self, text: str) -> dict[str, Any]:
        hit: set[str] = set()
        for words, categories in self.flags.items():
            if words in text.lower():
                hit.update(categories)
        return {
            "flagged": bool(hit),
            "categories": {c: c in hit for c in CATEGORIES},
            "category_scores": {c: (0.93 if c in hit else 0.0004) for c in CATEGORIES},
            "category_applied_input_types": {c: ["text"] for c in CATEGORIES},
        }

    async def _handle(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {self.key}":
            return _error(401, "Incorrect API key provided.", "invalid_request_error")
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return _error(400, "We could not parse the JSON body of your request.", "invalid_request_error")
        self.requests.append(body)
        if self.hang_s:
            await asyncio.sleep(self.hang_s)
        if self.status != 200:
            return _error(self.status, "The server had an error while processing your request.",
                          "server_error")
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else inputs
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return _error(400, "'input' must be a string or an array of strings", "invalid_request_error")
        return web.json_response({"id": f"modr-{secrets.token_hex(8)}",
                                  "model": body.get("model") or "omni-moderation-latest",
                                  "results": [self._result(t) for t in texts]})

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/moderations", self._handle)
        app.router.add_post("/v1/moderations", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


def _error(status: int, message: str, kind: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": kind, "param": None, "code": None}},
                             status=status)
