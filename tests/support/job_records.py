"""Background jobs' rows made and read back directly with the real job records (bot.jobs)."""

from __future__ import annotations

from typing import Any

from bot import jobs
from bot.storage.models import Conversation, GenerationJob, User
from tests.support.harness import Harness


async def conversation_of(h: Harness, user: User) -> int:
    async with h.services.sessions() as db:
        conv = Conversation(user_id=user.id, active=True, created_at=h.clock())
        db.add(conv)
        await db.commit()
        return conv.id


async def add_job(h: Harness, user: User, conversation_id: int, status: str = jobs.QUEUED,
                  **fields: Any) -> GenerationJob:
    values: dict[str, Any] = {"user_id": user.id, "conversation_id": conversation_id, "channel": "whatsapp",
                              "request": "Un bilan 2025 en Excel, en PDF, par e-mail", "status": status,
                              "state": {}, "created_at": h.clock()}
    values.update(fields)
    async with h.services.sessions() as db:
        job = GenerationJob(**values)
        db.add(job)
        await db.commit()
        return job


async def stored_job(h: Harness, job_id: int) -> GenerationJob:
    async with h.services.sessions() as db:
        job = await db.get(GenerationJob, job_id)
        assert job is not None
        return job


async def stored_events(h: Harness, job_id: int, after_id: int = 0) -> list[dict[str, Any]]:
    async with h.services.sessions() as db:
        return await jobs.events(db, job_id, after_id)
