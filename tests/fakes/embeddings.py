"""A local embeddings provider speaking OpenAI's `POST /v1/embeddings` (Bearer key, `model`,
`input` as a list, `data[].embedding` with its `index`, `usage`). Its vectors are deterministic:
the words of a text, folded and cut to their first five letters, hashed into 256 dimensions, and a
few groups of words that mean the same thing put on one dimension, so that a test can find a
paraphrase the keywords miss. `fail_next` answers that many calls 503."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

DIMENSIONS = 256
API_KEY = "test-embeddings-key"
# Words that mean the same thing for the stand-in (folded, first five letters).
SYNONYMS = (
    ("etat", "finan", "bilan", "actif", "passi", "patri"),
    ("angle", "droit", "perpe", "equer", "ortho"),
    ("ecrit", "compo", "redac", "texte"),
)


def _key(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    folded = "".join(c for c in decomposed if not unicodedata.combining(c))
    return folded[:5]


def vector(text: str) -> list[float]:
    out = [0.0] * DIMENSIONS
    for word in re.findall(r"[^\W_]{3,}", text):
        key = _key(word)
        group = next((i for i, words in enumerate(SYNONYMS) if key in words), None)
        hashed = 8 + int(hashlib.sha256(key.encode()).hexdigest(), 16) % (DIMENSIONS - 8)
        slot = group if group is not None else hashed
        out[slot] += 1.0
    return out


def _error(status: int, message: str, kind: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": kind}}, status=status)


@dataclass
class FakeEmbeddings:
    url: str = ""  # the EMBEDDINGS_BASE_URL, /v1 included
    fail_next: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    runner: web.AppRunner | None = None

    async def _embeddings(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {API_KEY}":
            return _error(401, "Incorrect API key provided", "invalid_request_error")
        body = await request.json()
        self.requests.append(body)
        if self.fail_next > 0:
            self.fail_next -= 1
            return _error(503, "The server is overloaded", "server_error")
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) for t in inputs):
            return _error(400, "'input' is invalid", "invalid_request_error")
        data = [{"object": "embedding", "index": i, "embedding": vector(t)} for i, t in enumerate(inputs)]
        tokens = sum(len(t.split()) for t in inputs)
        return web.json_response({"object": "list", "data": list(reversed(data)), "model": body.get("model"),
                                  "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/embeddings", self._embeddings)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/v1"
        return self.url

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
