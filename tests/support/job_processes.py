"""A long job on real processes (`python -m bot serve|worker`): the `long_work` fixture (a harness
whose own workers are stopped, a slow search and a scripted six-step model, and deployments of
processes on them), and the checks on the job it makes. The fixture is exposed by
tests/jobs/conftest.py and tests/core/conftest.py."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from bot.storage.models import CreditEntry, GenerationJob, OutboundMessage
from handlers.turn import LONG_WORK_NOTE
from tests.fakes.llm import Step
from tests.fakes.search import SlowSearch
from tests.support.background_turns import unlinked
from tests.support.harness import REDIS_URL, Harness, clear_redis
from tests.support.processes import Deployment

PHONE = "+2250710000141"
ANSWER = "Voici le bilan SYSCOHADA complet."
STEPS = 6
CALL_TOKENS = 2000  # one credit per model call at TOKENS_PER_CREDIT=2000: charges count calls


def _model(body: dict[str, Any]) -> Step:
    """Six searches, then the answer, decided from what the request already holds (any process)."""
    usage = {"prompt_tokens": CALL_TOKENS, "completion_tokens": 0, "total_tokens": CALL_TOKENS}
    done = sum(1 for m in body["messages"] if m["role"] == "tool")
    if done < STEPS and body.get("tools") and body.get("tool_choice") != "none":
        return Step("tools", calls=[("web_search", {"query": f"SYSCOHADA partie {done + 1}"}, None)],
                    usage=usage)
    return Step("text", content=ANSWER, usage=usage)


@pytest.fixture
async def long_work(make_harness: Any, tmp_path: Path) -> AsyncIterator[tuple[Harness, Any]]:
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    h = await make_harness(REDIS_URL=REDIS_URL, REDIS_KEY_PREFIX=prefix)
    await h.stop_workers()  # only the processes work
    await h.job_workers.stop()
    h.job_workers = None
    search = SlowSearch(0.8)  # each step takes that long
    search_url = await search.start()
    h.llm.responder = _model
    made: list[Deployment] = []

    def deploy(redis: bool = True) -> Deployment:
        d = Deployment(h, tmp_path, prefix)
        d.env.update({"AGENT_TURN_TIMEOUT_S": "2", "AGENT_FINAL_RESERVE_S": "1", "AGENT_TOOL_TIMEOUT_S": "10",
                      "JOB_LEASE_S": "1", "JOB_SWEEP_INTERVAL_S": "1", "JOB_BROKER_HEARTBEAT_TIMEOUT_S": "3",
                      "JOB_BROKER_MAINTENANCE_CHANCE": "1000000", "JOB_CONCURRENCY": "2",
                      "TAVILY_API_KEY": "tvly-test", "TAVILY_BASE_URL": search_url,
                      "TOKENS_PER_CREDIT": str(CALL_TOKENS), "LOG_LEVEL": "WARNING"})
        if not redis:
            d.env.pop("REDIS_URL", None)
        made.append(d)
        return d

    try:
        yield h, deploy
    finally:
        for d in made:
            d.stop()
        await search.stop()
        await clear_redis(prefix)


async def _job(h: Harness) -> GenerationJob | None:
    async with h.services.sessions() as db:
        return await db.scalar(select(GenerationJob).order_by(GenerationJob.id).limit(1))


async def until(h: Harness, check: Any, timeout_s: float = 60.0) -> GenerationJob:
    for _ in range(int(timeout_s / 0.1)):
        job = await _job(h)
        if job is not None and check(job):
            return job
        await asyncio.sleep(0.1)
    raise AssertionError(f"job never got there: {await _job(h)!r}")


def steps_done(job: GenerationJob) -> int:
    return sum(1 for m in (job.state or {}).get("messages", []) if m.get("role") == "tool")


async def _charged(h: Harness) -> int:
    async with h.services.sessions() as db:
        return -int(await db.scalar(select(func.coalesce(func.sum(CreditEntry.delta), 0))
                                    .where(CreditEntry.reason == "usage")) or 0)


async def assert_sent_once(h: Harness, job: GenerationJob) -> None:
    texts = unlinked(await h.texts_to(PHONE))
    assert texts.count(LONG_WORK_NOTE[0]) == 1 and texts.count(ANSWER) == 1, texts
    assert texts[-1] == ANSWER
    async with h.services.sessions() as db:
        keys = (await db.scalars(select(OutboundMessage.idempotency_key))).all()
    assert len(keys) == len(set(keys))
    # Every model call of the turn was charged once, the one the dead worker made included.
    assert job.state is not None and await _charged(h) == job.state["model_calls"]
