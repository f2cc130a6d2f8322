"""Jobs, steps and files for the progress page's tests, made with the real job records
(bot.jobs) and the real file library, and a reader of the page's event stream."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import aiohttp

import tools
from bot import jobs
from bot.channel.links import job_signature
from bot.library import add_file
from bot.storage.models import Conversation, GenerationJob, User, UserFile
from tests.support.harness import Harness


async def make_job(h: Harness, user: User, request: str, *, status: str = jobs.RUNNING) -> GenerationJob:
    async with h.services.sessions() as db:
        conversation = Conversation(user_id=user.id, created_at=h.clock())
        db.add(conversation)
        await db.flush()
        job = await jobs.create_job(db, user_id=user.id, conversation_id=conversation.id, inbound_id=None,
                                    channel="whatsapp", request=request, state={},
                                    deadline_at=h.clock() + timedelta(minutes=30), created_at=h.clock())
        job.status, job.started_at = status, h.clock()
        await db.commit()
        await db.refresh(job)
    return job


async def finish_job(h: Harness, job_id: int, status: str, text: str, file_ids: list[int]) -> None:
    async with h.services.sessions() as db:
        job = await db.get(GenerationJob, job_id)
        assert job is not None
        job.status, job.result_text, job.result_files, job.finished_at = status, text, file_ids, h.clock()
        await db.commit()


def page_path(h: Harness, job_id: int, *, sig: str | None = None, events: bool = False) -> str:
    sig = sig if sig is not None else job_signature(h.settings, job_id)
    return f"/jobs/{job_id}{'/events' if events else ''}?sig={sig}"


async def step(h: Harness, job_id: int, n: int, call_id: str, tool: str, *, lang: str = "fr",
               status: str | None = "ok", duration_ms: int = 1200) -> list[dict[str, Any]]:
    """A tool's start and (unless `status` is None) its end, as the runner records them."""
    label = jobs.step_label(tools.step_of(tool), lang)
    recorded = [await jobs.record_event(h.services, job_id, f"{n}:{call_id}:start", "tool_start",
                                        {"name": tool, "label": label, "n": n, "call_id": call_id})]
    if status is not None:
        recorded.append(await jobs.record_event(
            h.services, job_id, f"{n}:{call_id}:end", "tool_end",
            {"name": tool, "label": label, "status": status, "duration_ms": duration_ms, "call_id": call_id}))
    assert all(e is not None for e in recorded)
    return [e for e in recorded if e is not None]


async def made_file(h: Harness, user: User, name: str, mime: str, data: bytes) -> UserFile:
    """A generated file stored the way the tools store theirs (file store + user_files row)."""
    async with h.services.sessions() as db:
        row = await add_file(h.services, db, user_id=user.id, name=name, mime=mime, data=data,
                             origin="generated", text_content=name)
        await db.commit()
        await db.refresh(row)
    return row


async def done(h: Harness, job_id: int, text: str, files: list[UserFile],
               status: str = jobs.COMPLETED) -> None:
    for row in files:
        await jobs.record_event(h.services, job_id, f"file:{row.id}", "file",
                                {"file_id": row.id, "name": row.name, "mime": row.mime})
    await finish_job(h, job_id, status, text, [row.id for row in files])
    await jobs.record_event(h.services, job_id, "done", "done", {"status": status, "text": text})


async def read_events(resp: aiohttp.ClientResponse, count: int | None = None,
                      timeout_s: float = 5.0) -> list[tuple[str | None, dict[str, Any]]]:
    """(id, event) of each message of an event stream, until `count` of them or the stream's end."""
    got: list[tuple[str | None, dict[str, Any]]] = []
    event_id: str | None = None
    data: list[str] = []
    async with asyncio.timeout(timeout_s):
        async for raw in resp.content:
            line = raw.decode().rstrip("\r\n")
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif not line and data:
                got.append((event_id, json.loads("\n".join(data))))
                event_id, data = None, []
                if count is not None and len(got) >= count:
                    break
    return got
