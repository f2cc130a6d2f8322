"""Who may read /metrics: the app on METRICS_PORT (the private network's), and on the public port
only a scraper holding METRICS_TOKEN. Without the token the public port does not have it at all."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.harness import REDIS_URL, Harness, clear_redis
from tests.support.processes import Deployment, free_port

TOKEN = "metrics-token-0123456789abcdef"


async def test_the_public_port_has_no_metrics_without_a_token(harness: Harness) -> None:
    h = harness
    status, _, _ = await h.get("/metrics")
    assert status == 404
    status, _, _ = await h.get("/metrics", headers={"Authorization": "Bearer "})
    assert status == 404
    status, _, body = await h.scrape()  # the METRICS_PORT app has them
    assert status == 200 and b"deblo_queue_depth" in body


async def test_with_a_token_the_public_port_serves_metrics_to_its_holder_only(make_harness: Any) -> None:
    h = await make_harness(METRICS_TOKEN=TOKEN)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                    {"Authorization": f"Bearer {TOKEN}x"}, {"Authorization": f"Basic {TOKEN}"}):
        status, answer, body = await h.get("/metrics", headers=headers)
        assert status == 401, headers
        assert answer["WWW-Authenticate"].startswith("Bearer") and b"deblo_" not in body
    status, answer, body = await h.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and answer["Content-Type"].startswith("text/plain")
    assert b"deblo_queue_depth" in body


async def test_serve_has_metrics_on_metrics_port_and_not_on_its_public_port(
        make_harness: Any, tmp_path: Path) -> None:
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    h = await make_harness(REDIS_URL=REDIS_URL, REDIS_KEY_PREFIX=prefix)
    d = Deployment(h, tmp_path, prefix)
    metrics_url = f"http://127.0.0.1:{free_port()}"
    d.env["METRICS_PORT"] = metrics_url.rsplit(":", 1)[1]
    try:
        await d.start(workers=0)
        async with aiohttp.ClientSession() as session:
            async with session.get(d.url + "/metrics") as resp:
                assert resp.status == 404
            async with session.get(d.url + "/healthz") as resp:
                assert resp.status == 200
            async with session.get(metrics_url + "/metrics") as resp:
                assert resp.status == 200 and "deblo_queue_depth" in await resp.text()
            async with session.get(metrics_url + "/healthz") as resp:
                assert resp.status == 200
            async with session.post(metrics_url + "/twilio/inbound") as resp:
                assert resp.status == 404  # no webhook is taken on the metrics port
    finally:
        d.stop()
        await clear_redis(prefix)
