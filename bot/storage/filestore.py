"""Where file bytes live. One small interface; local disk under DATA_DIR by default.

An S3-compatible store would implement the same methods. `chunks` reads a file (or a byte span of
it) CHUNK_BYTES at a time, so whoever serves a file never holds it whole. Keys are ours (never a user's file
name), so no user input ever becomes a path.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Protocol

_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,400}$")
CHUNK_BYTES = 256 * 1024


class FileStore(Protocol):
    async def put(self, key: str, data: bytes) -> None: ...
    async def get(self, key: str) -> bytes: ...
    async def delete(self, key: str) -> None: ...
    async def size(self, key: str) -> int: ...
    def chunks(self, key: str, start: int = 0, end: int | None = None) -> AsyncIterator[bytes]: ...
    def local_path(self, key: str) -> Path | None: ...


def check_key(key: str) -> str:
    if not _KEY.match(key) or ".." in key.split("/"):
        raise ValueError(f"invalid storage key {key!r}")
    return key


class LocalFileStore:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def local_path(self, key: str) -> Path:
        path = (self.root / check_key(key)).resolve()
        if self.root not in path.parents:
            raise ValueError(f"invalid storage key {key!r}")
        return path

    async def put(self, key: str, data: bytes) -> None:
        path = self.local_path(key)

        def write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(path.suffix + ".part")
            tmp.write_bytes(data)
            tmp.replace(path)  # readers never see a half-written file

        await asyncio.to_thread(write)

    async def get(self, key: str) -> bytes:
        return await asyncio.to_thread(self.local_path(key).read_bytes)

    async def delete(self, key: str) -> None:
        self.local_path(key).unlink(missing_ok=True)

    async def size(self, key: str) -> int:
        return (await asyncio.to_thread(self.local_path(key).stat)).st_size

    async def chunks(self, key: str, start: int = 0, end: int | None = None) -> AsyncIterator[bytes]:
        """The bytes [start, end) of the file (to its end when `end` is None), in chunks of at most
        CHUNK_BYTES, each read in a thread."""
        handle = await asyncio.to_thread(self.local_path(key).open, "rb")
        try:
            await asyncio.to_thread(handle.seek, start)
            left = None if end is None else end - start
            while left is None or left > 0:
                want = CHUNK_BYTES if left is None else min(CHUNK_BYTES, left)
                data = await asyncio.to_thread(handle.read, want)
                if not data:
                    return
                left = None if left is None else left - len(data)
                yield data
        finally:
            handle.close()
