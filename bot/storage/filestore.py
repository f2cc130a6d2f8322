"""Where file bytes live. One small interface; local disk under DATA_DIR by default.

An S3-compatible store would implement the same four methods. Keys are ours (never a user's file
name), so no user input ever becomes a path.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Protocol

_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,400}$")


class FileStore(Protocol):
    async def put(self, key: str, data: bytes) -> None: ...
    async def get(self, key: str) -> bytes: ...
    async def delete(self, key: str) -> None: ...
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
