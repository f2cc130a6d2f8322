"""A `worker` process serves its own counters on METRICS_PORT: turns, model calls and sends happen
there, not in `serve`, so Prometheus scrapes each worker."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.harness import REDIS_URL, clear_redis
from tests.support.processes import Deployment, free_port


async def test_a_worker_serves_its_metrics_after_answering(make_harness: Any, tmp_path: Path) -> None:
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    h = await make_harness(REDIS_URL=REDIS_URL, REDIS_KEY_PREFIX=prefix)
    await h.stop_workers()
    h.llm.push_text("Bonjour depuis un worker.")
    d = Deployment(h, tmp_path, prefix)
    port = free_port()
    try:
        await h.make_user("+2250710000171")
        await d.start(workers=1, worker_env={"METRICS_PORT": str(port)})
        async with aiohttp.ClientSession() as session:
            assert await d.inbound(session, "+2250710000171", "Salut") == 200
            await h.settle(timeout_s=30)
            body = ""
            for _ in range(100):
                try:
                    async with session.get(f"http://127.0.0.1:{port}/metrics") as resp:
                        body = await resp.text()
                        if "deblo_turn_seconds_count" in body:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
            async with session.get(f"http://127.0.0.1:{port}/healthz") as resp:
                assert resp.status == 200
            async with session.post(f"http://127.0.0.1:{port}/twilio/inbound") as resp:
                assert resp.status == 404  # no webhook is taken on the metrics port
        assert 'deblo_turn_seconds_count{exit_reason="answered"} 1.0' in body
        assert "deblo_llm_calls_total" in body and "deblo_twilio_sends_total" in body
    finally:
        d.stop()
        await clear_redis(prefix)
