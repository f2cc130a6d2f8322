"""The deployment with Redis: one `serve` and several `worker` processes, killed and restarted.

These run the real command line (`python -m bot serve|worker`) as processes on the test database,
with Redis as the shared queue and state (whatever TEST_STATE says), and the fake Twilio and LLM
of a harness whose own workers are stopped.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import select

from bot.storage.models import InboundMessage
from tests.fakes.llm import Step
from tests.harness import REDIS_URL, Harness, clear_redis, new_sid, sign

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Deployment:
    def __init__(self, h: Harness, tmp_path: Path, prefix: str) -> None:
        self.h = h
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("TEST_")}, **h.env,
                    "PYTHONPATH": str(ROOT), "PORT": str(self.port), "HOST": "127.0.0.1",
                    "PUBLIC_BASE_URL": self.url, "REDIS_URL": REDIS_URL, "REDIS_KEY_PREFIX": prefix,
                    "WORKER_LEASE_S": "2", "WORKER_CONCURRENCY": "4", "LOG_LEVEL": "ERROR"}
        self.cwd = tmp_path
        self.workers: list[subprocess.Popen[bytes]] = []
        self.server: subprocess.Popen[bytes] | None = None

    def _spawn(self, *args: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "bot", *args], cwd=self.cwd, env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    async def start(self, workers: int = 2) -> None:
        self.server = self._spawn("serve")
        for _ in range(workers):
            self.workers.append(self._spawn("worker"))
        async with aiohttp.ClientSession() as session:
            for _ in range(200):
                try:
                    async with session.get(self.url + "/readyz") as resp:
                        if resp.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                if self.server.poll() is not None:
                    raise RuntimeError(f"serve exited: {self.server.stderr.read().decode()}")  # type: ignore[union-attr]
                await asyncio.sleep(0.05)
        raise RuntimeError("serve did not become ready")

    async def inbound(self, session: aiohttp.ClientSession, phone: str, body: str) -> int:
        sid = new_sid()
        params = {"MessageSid": sid, "SmsMessageSid": sid, "From": f"whatsapp:{phone}",
                  "To": "whatsapp:+14155238886", "Body": body, "NumMedia": "0",
                  "AccountSid": self.h.settings.twilio_account_sid}
        signature = sign(self.h.settings.twilio_auth_token, self.url + "/twilio/inbound", params)
        async with session.post(self.url + "/twilio/inbound", data=params,
                                headers={"X-Twilio-Signature": signature}) as resp:
            return resp.status

    def stop(self) -> None:
        for proc in [*self.workers, *([self.server] if self.server else [])]:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in [*self.workers, *([self.server] if self.server else [])]:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture
async def deployment(make_harness: Any, tmp_path: Path) -> AsyncIterator[Deployment]:
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    h = await make_harness(REDIS_URL=REDIS_URL, REDIS_KEY_PREFIX=prefix)
    await h.stop_workers()  # only the worker processes work

    def echo(body: dict[str, Any]) -> Step:
        last = next(m for m in reversed(body["messages"]) if m["role"] == "user")
        content = last["content"] if isinstance(last["content"], str) else str(last["content"])
        return Step("text", content="echo " + content.strip().splitlines()[-1])

    h.llm.responder = echo
    d = Deployment(h, tmp_path, prefix)
    try:
        yield d
    finally:
        d.stop()
        await clear_redis(prefix)


def _tokens(texts: list[str], tag: str) -> list[str]:
    return [word for text in texts for word in text.split() if word.startswith(tag)]


async def test_serve_and_two_workers_keep_each_users_order(deployment: Deployment) -> None:
    d, h = deployment, deployment.h
    phones = [f"+22507100000{i:02d}" for i in range(5)]
    for phone in phones:
        await h.make_user(phone)
    await d.start(workers=2)
    async with aiohttp.ClientSession() as session:
        for n in range(6):
            sends = (d.inbound(session, p, f"q{i}-{n}") for i, p in enumerate(phones))
            statuses = await asyncio.gather(*sends)
            assert set(statuses) == {200}
    await h.settle(timeout_s=60)
    for i, phone in enumerate(phones):
        texts = await h.texts_to(phone)
        assert _tokens(texts, f"q{i}-") == [f"q{i}-{n}" for n in range(6)], texts
    async with h.services.sessions() as db:
        rows = (await db.scalars(select(InboundMessage))).all()
    assert len(rows) == 30 and {r.status for r in rows} == {"done"} and {r.attempts for r in rows} == {1}


async def test_workers_killed_mid_turn_then_restarted(deployment: Deployment) -> None:
    d, h = deployment, deployment.h
    phone = "+2250710000099"
    await h.make_user(phone)
    await d.start(workers=2)
    h.llm.push_hang(4)  # the first turn gets no answer from the model before the crash
    async with aiohttp.ClientSession() as session:
        assert await d.inbound(session, phone, "bloque") == 200
        for _ in range(200):
            if h.llm.requests:
                break
            await asyncio.sleep(0.05)
        assert h.llm.requests, "the turn did not start"
        assert await d.inbound(session, phone, "ensuite") == 200
    for proc in d.workers:
        proc.send_signal(signal.SIGKILL)  # a crash: no cleanup, the user's lock stays in Redis
        proc.wait()
    async with h.services.sessions() as db:
        statuses = [r.status for r in (await db.scalars(select(InboundMessage).order_by(InboundMessage.id)))]
    assert statuses == ["processing", "pending"]
    d.workers = [d._spawn("worker")]
    await h.settle(timeout_s=60)
    texts = await h.texts_to(phone)
    assert _tokens(texts, "bloque") == ["bloque"] and _tokens(texts, "ensuite") == ["ensuite"]
    assert texts.index("echo bloque") < texts.index("echo ensuite")
    async with h.services.sessions() as db:
        rows = (await db.scalars(select(InboundMessage).order_by(InboundMessage.id))).all()
    assert [(r.status, r.attempts) for r in rows] == [("done", 2), ("done", 1)]
