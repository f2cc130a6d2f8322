"""Locks of the single-process mode as lock files (bot.storage.file_locks): they hold across
processes, a dead holder's lock is free at once, and a lock let go leaves no file behind."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bot.storage.state import MemoryState

ROOT = Path(__file__).resolve().parents[2]
HOLDER = """
import sys, time
from pathlib import Path
from bot.storage.file_locks import FileLocks
locks = FileLocks(Path(sys.argv[1]))
assert locks.try_take("lock:user:7")
print("held", flush=True)
time.sleep(600)
"""


async def test_a_lock_held_by_another_process_is_free_once_that_process_dies(tmp_path: Path) -> None:
    folder = tmp_path / "locks"
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOLDER, str(folder), cwd=str(ROOT), stdout=asyncio.subprocess.PIPE)
    try:
        assert holder.stdout is not None
        assert await asyncio.wait_for(holder.stdout.readline(), 30) == b"held\n"
        state = MemoryState(lock_dir=folder)
        assert await state.acquire("lock:user:7", 30) is None
        assert await state.acquire("lock:user:8", 30) is not None  # another user's lock is apart
    finally:
        holder.kill()
        await holder.wait()
    token = await state.acquire("lock:user:7", 30)
    assert token is not None
    await state.close()


async def test_two_holders_exclude_each_other_and_leave_no_file(tmp_path: Path) -> None:
    folder = tmp_path / "locks"
    one, two = MemoryState(lock_dir=folder), MemoryState(lock_dir=folder)
    token = await one.acquire("lock:user:1", 30)
    assert token is not None and await two.acquire("lock:user:1", 30) is None
    assert await one.renew("lock:user:1", token, 30)
    await one.release("lock:user:1", "not-the-token")  # only its holder lets it go
    assert await two.acquire("lock:user:1", 30) is None
    await one.release("lock:user:1", token)
    again = await two.acquire("lock:user:1", 30)
    assert again is not None and await one.acquire("lock:user:1", 30) is None
    await two.release("lock:user:1", again)
    assert list(folder.iterdir()) == []
    await one.close()
    await two.close()
