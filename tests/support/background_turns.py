"""Long turns in one process: a harness whose turns are promoted to jobs after a second, a slow
search tool, a scripted model that runs it a given number of times, and waiting for a job."""

from __future__ import annotations

import asyncio
import re
from typing import Any
from urllib.parse import urlparse

from sqlalchemy import select

from bot.agent.toolspec import Tool, ToolContext
from bot.storage.models import GenerationJob
from tests.fakes.llm import Step
from tests.support.agent_loop import OBJ, offer


async def _slow(_ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(float(args.get("s", 0.5)))
    return {"success": True, "done": args.get("what", "")}


SLOW = Tool("web_search", "searches slowly", OBJ, frozenset({"child", "pro"}), _slow)


async def long_harness(make_harness: Any, turn_s: str = "1") -> Any:
    h = await make_harness(AGENT_TURN_TIMEOUT_S=turn_s, AGENT_FINAL_RESERVE_S="1", JOB_SWEEP_INTERVAL_S="1",
                           JOB_LEASE_S="1")
    offer(h, SLOW)
    return h


def script_steps(h: Any, steps: int, seconds: float, answer: str = "Voici le bilan complet.",
                 when: str = "") -> None:
    """The model's part: `steps` slow searches, then `answer`, for the request containing `when`
    (decided from each request, so that concurrent turns each get their own script)."""
    plans = h.llm.__dict__.setdefault("plans", {})
    plans[when] = (steps, seconds, answer)

    def respond(body: dict[str, Any]) -> Step:
        messages = body["messages"]
        last = max(i for i, m in enumerate(messages) if m["role"] == "user" and isinstance(m["content"], str))
        asked = messages[last]["content"]
        key = max((k for k in plans if k in asked), key=len, default="")
        todo, wait, text = plans[key]
        done = sum(1 for m in messages[last:] if m["role"] == "tool")
        if done < todo:
            return Step("tools", calls=[("web_search", {"s": wait, "what": f"étape {done + 1}"}, None)])
        return Step("text", content=text)

    h.llm.responder = respond


# The last line of the ⏳ note and of a job's answer: the link to the job's live page.
_LINK_LINE = re.compile(r"\n🔗 (?:En direct :|Live:) (\S+)$")


def job_link(text: str) -> str | None:
    """The job page's link a message ends with, if it does."""
    found = _LINK_LINE.search(text)
    return found.group(1) if found else None


def unlinked(texts: list[str]) -> list[str]:
    """The messages without their job link line, to compare with the texts they carry."""
    return [_LINK_LINE.sub("", t) for t in texts]


async def open_link(h: Any, link: str) -> tuple[int, str]:
    """GETs a job link through the harness's server: (status, the page's HTML)."""
    assert link.startswith(h.settings.public_base_url), link
    url = urlparse(link)
    status, _, body = await h.get(f"{url.path}?{url.query}")
    return status, body.decode()


async def jobs(h: Any) -> list[GenerationJob]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(GenerationJob).order_by(GenerationJob.id))).all())


async def wait_job(h: Any, status: str | tuple[str, ...], timeout_s: float = 30.0,
                   index: int = 0) -> GenerationJob:
    wanted = (status,) if isinstance(status, str) else status
    for _ in range(int(timeout_s / 0.05)):
        found = await jobs(h)
        if len(found) > index and found[index].status in wanted:
            return found[index]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no job {index} in {wanted}: {[(j.id, j.status) for j in await jobs(h)]}")
