"""The bot as its own processes for the tests that kill and restart them: a `Deployment` of
`python -m bot serve` and `worker` processes on a harness's database and Redis, and a `RedisServer`
of a test's own, on a free port, that the test may stop and start again; `start_up_lines`, what
`serve` says as it starts; `started_fakes`, the stand-ins such a process talks to."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path

import aiohttp
import pytest

from tests.fakes.llm import FakeLLM
from tests.fakes.twilio import FakeTwilio
from tests.support.harness import REDIS_URL, Harness, new_sid, sign
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


class Deployment:
    def __init__(self, h: Harness, tmp_path: Path, prefix: str) -> None:
        self.h = h
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("TEST_")}, **h.env,
                    "PYTHONPATH": str(ROOT), "PORT": str(self.port), "HOST": "127.0.0.1",
                    "PUBLIC_BASE_URL": self.url, "REDIS_URL": REDIS_URL, "REDIS_KEY_PREFIX": prefix,
                    "WORKER_LEASE_S": "2", "WORKER_CONCURRENCY": "4", "LOG_LEVEL": "ERROR"}
        self.cwd = tmp_path
        self.workers: list[subprocess.Popen[bytes]] = []
        self.server: subprocess.Popen[bytes] | None = None

    def _spawn(self, *args: str, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "bot", *args], cwd=self.cwd,
                                env={**self.env, **(env or {})}, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)

    async def start(self, workers: int = 2, worker_env: Mapping[str, str] | None = None) -> None:
        """`serve` and `workers` workers; `worker_env` is the workers' own (e.g. METRICS_PORT)."""
        self.server = self._spawn("serve")
        for _ in range(workers):
            self.workers.append(self._spawn("worker", env=worker_env))
        async with aiohttp.ClientSession() as session:
            # Up to 30 s: three processes importing the whole bot at once, beside both test passes,
            # took over 10 s on a slow 2-core machine.
            for _ in range(600):
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
async def started_fakes() -> AsyncIterator[tuple[FakeTwilio, FakeLLM]]:
    """The stand-ins of Twilio and the model's API, for a process of the bot's the test starts."""
    twilio, llm = FakeTwilio(), FakeLLM()
    await twilio.start()
    await llm.start()
    yield twilio, llm
    await twilio.stop()
    await llm.stop()


def start_up_lines(env: Mapping[str, str], cwd: Path) -> list[str]:
    """What `python -m bot serve` writes (its log, and any error) until it says « serving » or
    exits; then it is stopped."""
    proc = subprocess.Popen([sys.executable, "-m", "bot", "serve"], cwd=cwd, env=dict(env),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if "serving" in line:
                break
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return seen


class RedisServer:
    def __init__(self, port: int, workdir: Path) -> None:
        self.port, self.workdir = port, workdir
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary, "redis-server is needed for this test (apt-get install redis-server)"
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        for _ in range(100):
            assert self.proc.poll() is None, f"redis-server exited (port {self.port} taken?)"
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            subprocess.run(["sleep", "0.05"], check=True)
        raise AssertionError("the test's redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis server of the test's own on a free port, which it may stop without the suite's."""
    server = RedisServer(free_port(), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
