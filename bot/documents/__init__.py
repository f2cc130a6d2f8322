"""Documents: generators (one module per format), text extraction and the shared content model."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar, cast

from bot.documents.errors import DocumentError

__all__ = ["CPU_TIMEOUT_S", "DocumentError", "calc", "charts", "content", "convert", "docx", "extract",
           "markdown", "names", "pdf", "pptx", "run_cpu", "run_in_thread", "sheet_pdf", "xlsx"]

T = TypeVar("T")

# A generator or extractor that runs past this is stopped (the tool timeout is the outer bound).
CPU_TIMEOUT_S = 45.0


def _call(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[str, Any]:
    """Runs in the child: content errors come back as values, so their message reaches the model."""
    from bot.documents.content import ContentError

    try:
        return "ok", fn(*args)
    except ContentError as exc:
        return "content_error", str(exc)


async def run_cpu(fn: Callable[..., T], *args: Any, timeout_s: float = CPU_TIMEOUT_S) -> T:
    """Runs CPU-bound document work in a child process that is killed on timeout or cancellation,
    so a document that makes a library spin cannot hold a worker (bot.sandbox.killable).

    Raises ContentError as `fn` did, TimeoutError past `timeout_s`.
    """
    from bot.documents.content import ContentError
    from bot.sandbox.killable import run_killable

    status, value = await run_killable(_call, fn, args, timeout_s=timeout_s)
    if status == "content_error":
        raise ContentError(value)
    return cast(T, value)  # what fn returned, unpickled from the child


async def run_in_thread(fn: Callable[..., T], *args: Any, timeout_s: float = CPU_TIMEOUT_S) -> T:
    return await asyncio.wait_for(asyncio.to_thread(fn, *args), timeout_s)
