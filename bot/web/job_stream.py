"""The event stream of a job's progress page: GET /jobs/{id}/events?sig=… (server-sent events),
and the ROUTES of the page and its stream that bot/cli.py mounts.

The stream replays the stored events (after Last-Event-ID) and then the live ones published on the
job's channel; it ends after `done`, or after SSE_MAX_SECONDS, when the browser's EventSource
reconnects by itself with the last id it got and carries on from there.

Streams are held within limits, per process: every one of them reads the job's channel through the
shared state's single subscriber connection (bot.storage.pubsub), never a connection of the pool
webhooks use; at most SSE_MAX_PER_JOB streams per job and SSE_MAX_PER_ADDRESS per client are open
at once, more are refused with 429. The client is bot.web.clients's: the TCP peer, or behind one of
TRUSTED_PROXIES the browser's address the proxy passes on, so that one reader's streams behind the
proxy leave every other reader theirs. A reader that went away frees its place at its stream's
next write (a keep-alive every SSE_KEEPALIVE_S at the latest). HEAD answers the headers only, holding
nothing. deblo_job_streams counts the open streams, deblo_job_streams_refused_total the refusals.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bot import jobs
from bot.channel.links import ID_PATTERN, file_url
from bot.channel.malformed import MalformedRequest
from bot.metrics import JOB_STREAMS, JOB_STREAMS_REFUSED
from bot.services import Services
from bot.storage.models import GenerationJob
from bot.web.clients import client_of
from bot.web.job_page import (
    authorised_job,
    ended_unannounced,
    headers,
    job_files,
    job_page,
    language_of,
    short_page,
    size_text,
)

log = logging.getLogger("bot.web.job_stream")

SLOTS_KEY = "job_streams"  # in Services.extra: the streams this process holds


@dataclass
class StreamSlots:
    """The streams open in this process, by job and by client address."""

    per_job: int
    per_address: int
    by_job: Counter[int] = field(default_factory=Counter)
    by_address: Counter[str] = field(default_factory=Counter)

    def take(self, job_id: int, address: str) -> bool:
        full = ("job" if self.by_job[job_id] >= self.per_job else
                "address" if self.by_address[address] >= self.per_address else None)
        if full is not None:
            JOB_STREAMS_REFUSED.labels(limit=full).inc()
            return False
        self.by_job[job_id] += 1
        self.by_address[address] += 1
        JOB_STREAMS.inc()
        return True

    def give_back(self, job_id: int, address: str) -> None:
        JOB_STREAMS.dec()
        self.by_job[job_id] -= 1
        self.by_address[address] -= 1
        if self.by_job[job_id] <= 0:  # a closed job's or address's entry does not stay behind
            del self.by_job[job_id]
        if self.by_address[address] <= 0:
            del self.by_address[address]


def slots_of(services: Services) -> StreamSlots:
    slots = services.extra.get(SLOTS_KEY)
    if not isinstance(slots, StreamSlots):
        slots = StreamSlots(services.settings.sse_max_per_job, services.settings.sse_max_per_address)
        services.extra[SLOTS_KEY] = slots
    return slots


def last_event_id(request: web.Request) -> int:
    """The id the browser resends on reconnecting: one we wrote, so ASCII digits; anything else
    (`²`, which `isdigit` takes and `int` refuses) is MalformedRequest, a 400."""
    value = request.headers.get("Last-Event-ID", "").strip()
    if not value:
        return 0
    if not (value.isascii() and value.isdigit() and len(value) <= 18):
        raise MalformedRequest("Last-Event-ID is not an event id")
    return int(value)


async def _stored(services: Services, job_id: int, after: int) -> list[dict[str, Any]]:
    async with services.sessions() as db:
        return await jobs.events(db, job_id, after_id=after)


async def _for_page(services: Services, job: GenerationJob, lang: str,
                    event: dict[str, Any]) -> dict[str, Any]:
    """A `file` event with its signed link and size: the page's script cannot sign."""
    if event.get("type") != "file" or not isinstance(event.get("file_id"), int):
        return event
    rows = await job_files(services, job, [event["file_id"]])
    if not rows:
        return event
    return {**event, "url": file_url(services.settings, rows[0], read_later=True),
            "size_text": size_text(rows[0].size, lang)}


async def _send(resp: web.StreamResponse, event: dict[str, Any]) -> None:
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))  # one line: newlines are escaped
    head = f"id: {int(event['id'])}\n" if event.get("id") else ""
    await resp.write(f"{head}data: {data}\n\n".encode())


def _parsed(message: Any) -> dict[str, Any] | None:
    try:
        event = json.loads(message) if isinstance(message, str | bytes) else message
    except ValueError:
        return None
    return event if isinstance(event, dict) and "type" in event else None


async def _end_unannounced(services: Services, job_id: int) -> dict[str, Any] | None:
    """A last `done` (without id) when the job ended a while ago and none was recorded."""
    async with services.sessions() as db:
        row = await db.get(GenerationJob, job_id)
    if row is not None and not ended_unannounced(services, row):
        return None
    if row is None:
        return {"type": "done", "status": "cancelled", "text": ""}
    return {"type": "done", "status": row.status, "text": row.result_text or ""}


async def stream(services: Services, job: GenerationJob, lang: str, resp: web.StreamResponse,
                 sub: Any, after: int) -> None:
    """Stored events after `after`, then live ones (the subscription was opened first, so none
    falls between; ids already sent are skipped), until `done` or SSE_MAX_SECONDS."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + services.settings.sse_max_seconds
    last, pending, quiet = after, await _stored(services, job.id, after), True
    while True:
        for event in pending:
            if event.get("id") and int(event["id"]) <= last:
                continue
            await _send(resp, await _for_page(services, job, lang, event))
            last = int(event.get("id") or last)
            if event.get("type") == "done":
                return
        if quiet and (end := await _end_unannounced(services, job.id)) is not None:
            await _send(resp, end)
            return
        if loop.time() >= give_up:
            return
        message = await sub.get(min(services.settings.sse_keepalive_s, max(0.05, give_up - loop.time())))
        if message is None and sub.closed:
            return  # the live source went away: the browser reconnects and subscribes again
        quiet = message is None
        if not quiet:
            pending = [e for e in [_parsed(message)] if e is not None]
            continue
        await resp.write(b": keep-alive\n\n")
        # Whatever the live channel missed (a publish during a Redis reconnect) is in the table.
        pending = await _stored(services, job.id, last)


def _busy(retry_ms: int) -> web.Response:
    refused = short_page(429, "busy")
    refused.headers["Retry-After"] = str(max(1, retry_ms // 1000))
    return refused


async def job_events(request: web.Request) -> web.StreamResponse:
    found = await authorised_job(request)
    if isinstance(found, web.Response):
        return found
    services, job, user = found
    after = last_event_id(request)  # an odd one is refused before anything is held
    stream_headers = {**headers(None), "Content-Type": "text/event-stream; charset=utf-8",
                      "X-Accel-Buffering": "no"}
    if request.method == "HEAD":  # the headers a GET would get; no stream, nothing held
        return web.Response(headers=stream_headers)
    slots, address = slots_of(services), client_of(request, services.settings.trusted_proxies)
    if not slots.take(job.id, address):
        return _busy(services.settings.sse_retry_ms)
    resp = web.StreamResponse(headers=stream_headers)
    try:
        await resp.prepare(request)
        await resp.write(f"retry: {services.settings.sse_retry_ms}\n\n".encode())
        async with services.state.subscribe(jobs.progress_channel(job.id)) as sub:
            await stream(services, job, language_of(user), resp, sub, after)
        await resp.write_eof()
    except ConnectionResetError:  # the reader went away (aiohttp's reset error is one)
        log.debug("job stream closed by the reader", extra={"job_id": job.id})
    finally:
        slots.give_back(job.id, address)
    return resp


# An id in another spelling (`007`) matches no route: 404, as for an unknown job.
ROUTES: list[web.RouteDef] = [web.get(f"/jobs/{{id:{ID_PATTERN}}}", job_page),
                              web.get(f"/jobs/{{id:{ID_PATTERN}}}/events", job_events)]
