"""Locks that hold across the processes of one host: an exclusive `flock` on a file of DATA_DIR/locks.

Without Redis the shared state lives in the memory of `serve`, but the operator's console
(`python -m bot users forget`) is a process of its own: a lock kept in memory would not keep it off
a turn that is answering the same user. A lock file does, and the kernel lets go of it when its
process dies, so a crash leaves nothing to clean up. The file is named by a hash of the key, and
removed by its holder before it lets go; whoever locked a file that was removed meanwhile (opened
just before) sees it and tries again, so two holders never meet on two files of one name.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from pathlib import Path
from typing import IO

__all__ = ["FileLocks"]


class FileLocks:
    """The lock files one holder (one `MemoryState`) has taken, by key. Two holders exclude each
    other whether they are in two processes or in one."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._held: dict[str, IO[bytes]] = {}

    def path(self, key: str) -> Path:
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.lock"

    def holds(self, key: str) -> bool:
        return key in self._held

    def try_take(self, key: str) -> bool:
        """Takes the key's lock file without waiting; False while another holder has it."""
        if key in self._held:
            return True
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.path(key)
        for _ in range(3):  # each retry follows a holder that just let go: rare, and short
            handle = open(path, "ab")  # kept open while held: the lock is the open file
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                return False
            try:
                same = os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self._held[key] = handle
                return True
            handle.close()  # locked a file its holder removed as it let go: try the new one
        return False

    def let_go(self, key: str) -> None:
        handle = self._held.pop(key, None)
        if handle is None:
            return
        try:
            os.unlink(self.path(key))  # still locked: a holder-to-be that opened it sees it gone
        except FileNotFoundError:
            pass
        finally:
            handle.close()

    def close(self) -> None:
        for key in list(self._held):
            self.let_go(key)
