"""A user's file stored as the file library stores one: its row, then its bytes under its key."""

from __future__ import annotations

from bot.storage.models import UserFile
from tests.support.harness import Harness


async def stored_file(h: Harness, user_id: int, name: str, mime: str, data: bytes) -> UserFile:
    async with h.services.sessions() as db:
        row = UserFile(user_id=user_id, name=name, mime=mime, size=len(data), origin="upload",
                       storage_key="pending")
        db.add(row)
        await db.flush()
        row.storage_key = f"uploads/{user_id}/{row.id}"
        await db.commit()
        await db.refresh(row)
    await h.services.files.put(row.storage_key, data)
    return row
