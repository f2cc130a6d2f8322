"""Retention covers background jobs: ended ones older than RETENTION_DAYS go with their timeline,
and so does a "starting" row whose turn died before promoting it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select

from bot.pipeline.retention import purge
from bot.storage.models import Conversation, GenerationJob, JobEvent


async def test_old_ended_jobs_and_their_events_go_a_running_one_stays(harness: Any) -> None:
    h = harness
    user = await h.make_user("+2250700000151", mode="pro")
    old = h.clock() - timedelta(days=h.settings.retention_days + 1)
    async with h.services.sessions() as db:
        conv = Conversation(user_id=user.id, active=True, created_at=old)
        db.add(conv)
        await db.flush()
        made = {}
        for status in ("completed", "failed", "cancelled", "starting", "running"):
            job = GenerationJob(user_id=user.id, conversation_id=conv.id, channel="whatsapp",
                                request=f"old {status}", status=status, state={}, created_at=old)
            db.add(job)
            await db.flush()
            db.add(JobEvent(job_id=job.id, key="done", type="done", data={"status": status}, created_at=old))
            made[status] = job.id
        young = GenerationJob(user_id=user.id, conversation_id=conv.id, channel="whatsapp", request="new",
                              status="completed", state={}, created_at=h.clock())
        db.add(young)
        await db.commit()
    report = await purge(h.services, h.clock())
    assert report.deleted["generation_jobs"] == 4
    async with h.services.sessions() as db:
        left = set((await db.scalars(select(GenerationJob.id))).all())
    assert left == {made["running"], young.id}
