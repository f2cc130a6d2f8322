"""The whole bot on real servers, for end-to-end tests.

A `Harness` runs the real aiohttp app on a loopback port, the real pipeline (workers, sweeper) and
the real handler chain, on a real database and real state (a SQLite file with in-process state,
or PostgreSQL with Redis: the test's backend, tests/conftest.py), with Twilio and the LLM stood in
by local servers speaking their wire formats (tests/fakes). Webhooks are signed with the twilio
library, as Twilio does.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import secrets
import shutil
import socket
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp import web
from sqlalchemy import func, select
from twilio.request_validator import RequestValidator

from bot.billing import credits
from bot.channel.web import create_app, create_metrics_app
from bot.clock import ManualClock, system_now
from bot.config import Settings, load_settings
from bot.pipeline.scheduler import run_once
from bot.pipeline.workers import Pipeline
from bot.services import Services, build_services
from bot.storage.models import InboundMessage, User
from tests.fakes.llm import FakeLLM
from tests.fakes.twilio import FakeTwilio

WHATSAPP_FROM = "whatsapp:+14155238886"
SMS_FROM = "+15005550006"
ORG_NAME = "Lycée Sainte-Marie"  # the school whose service the harness runs (the welcome, AIDE, the redirect)
POSTGRES_ADMIN_URL = os.environ.get("TEST_POSTGRES_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
_sids = itertools.count(1)


# The two backends a test that asks for the database runs on: a SQLite file with in-process state
# (the single-process deployment), and PostgreSQL with Redis (the scaled-out one).
BACKENDS: dict[str, tuple[str, str]] = {"sqlite": ("sqlite", "memory"), "postgres": ("postgres", "redis")}


def backend() -> tuple[str, str]:
    """The (database, state) of the running test's backend, which its `backend_name` fixture set."""
    return _current


def use_backend(name: str) -> tuple[str, str]:
    global _current
    _current = BACKENDS[name]
    return _current


_current = BACKENDS["sqlite"]


def new_sid(prefix: str = "SM") -> str:
    return f"{prefix}{next(_sids):08d}{secrets.token_hex(12)}"


def sign(auth_token: str, url: str, params: Mapping[str, str] | Sequence[tuple[str, str]]) -> str:
    pairs = list(params.items()) if isinstance(params, Mapping) else list(params)
    from multidict import MultiDict

    return RequestValidator(auth_token).compute_signature(url, MultiDict(pairs))


@dataclass
class Database:
    """A fresh database for one test: its URL, its kind (sqlite, postgres) and the shared state that
    goes with it (memory, redis)."""

    url: str
    kind: str
    state: str = "memory"


@dataclass
class Harness:
    settings: Settings
    services: Services
    twilio: FakeTwilio
    llm: FakeLLM
    clock: ManualClock
    base_url: str  # where the app listens (PUBLIC_BASE_URL may differ: a proxy's address)
    pipeline: Pipeline
    runner: web.AppRunner
    session: aiohttp.ClientSession
    env: dict[str, str] = field(default_factory=dict)
    job_workers: Any = None  # bot.pipeline.job_workers.JobWorkers: background jobs run in the test process
    metrics_runner: web.AppRunner | None = None  # the METRICS_PORT app, started by the first scrape
    metrics_url: str = ""

    # --- webhooks ----------------------------------------------------------------------------
    def address(self, phone: str, channel: str) -> str:
        return f"whatsapp:{phone}" if channel == "whatsapp" and not phone.startswith("whatsapp:") else phone

    async def inbound(
        self,
        from_: str,
        body: str = "",
        channel: str = "whatsapp",
        media: Iterable[Any] = (),
        sid: str | None = None,
        extra: Mapping[str, str] | None = None,
        signed: bool = True,
    ) -> tuple[int, str]:
        """Posts an inbound webhook as Twilio would. `media` items: a URL, or (bytes, content_type)
        which the fake Twilio then serves behind Basic auth."""
        media_items: list[tuple[str, str]] = []
        for item in media:
            if isinstance(item, str):
                media_items.append((item, "application/octet-stream"))
            else:
                data, content_type = item
                media_items.append((self.twilio.add_media(data, content_type), content_type))
        sid = sid or new_sid("MM" if media_items else "SM")
        params: dict[str, str] = {
            "SmsMessageSid": sid, "NumMedia": str(len(media_items)), "SmsSid": sid, "SmsStatus": "received",
            "Body": body, "To": WHATSAPP_FROM if channel == "whatsapp" else SMS_FROM, "NumSegments": "1",
            "MessageSid": sid, "AccountSid": self.settings.twilio_account_sid,
            "From": self.address(from_, channel), "ApiVersion": "2010-04-01",
        }
        if channel == "whatsapp" and from_.startswith("+"):
            params["WaId"] = from_[1:]
        for i, (url, content_type) in enumerate(media_items):
            params[f"MediaUrl{i}"] = url
            params[f"MediaContentType{i}"] = content_type
        params.update(extra or {})
        return await self.post_form("/twilio/inbound", params, signed=signed)

    async def post_form(self, path: str, params: Mapping[str, str] | Sequence[tuple[str, str]], *,
                        signed: bool = True, signature: str | None = None,
                        signed_url: str | None = None, raw_body: bytes | None = None,
                        content_type: str = "application/x-www-form-urlencoded") -> tuple[int, str]:
        """Posts a form; signed (by default) for PUBLIC_BASE_URL + path, as Twilio signs it."""
        pairs = list(params.items()) if isinstance(params, Mapping) else list(params)
        headers = {"Content-Type": content_type}
        if signature is not None:
            headers["X-Twilio-Signature"] = signature
        elif signed:
            headers["X-Twilio-Signature"] = sign(
                self.settings.twilio_auth_token, signed_url or self.settings.public_base_url + path, pairs
            )
        body = raw_body if raw_body is not None else urlencode(pairs).encode()
        async with self.session.post(self.base_url + path, data=body, headers=headers) as resp:
            return resp.status, await resp.text()

    async def get(self, path: str, method: str = "GET",
                  headers: Mapping[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        async with self.session.request(method, self.base_url + path, headers=headers) as resp:
            return resp.status, dict(resp.headers), await resp.read()

    async def scrape(self) -> tuple[int, dict[str, str], bytes]:
        """GET /metrics as Prometheus reads it: from the app `serve` and `worker` run on METRICS_PORT
        (the public port has none without METRICS_TOKEN), on a port of its own from the first call."""
        if self.metrics_runner is None:
            self.metrics_runner = web.AppRunner(create_metrics_app(self.services), access_log=None)
            await self.metrics_runner.setup()
            sock = _free_socket()
            await web.SockSite(self.metrics_runner, sock).start()
            self.metrics_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        async with self.session.get(self.metrics_url + "/metrics") as resp:
            return resp.status, dict(resp.headers), await resp.read()

    # --- waiting -----------------------------------------------------------------------------
    async def settle(self, timeout_s: float = 15.0) -> None:
        """Waits until every accepted inbound message is processed and Twilio's callbacks are made."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            async with self.services.sessions() as db:
                busy = await db.scalar(
                    select(func.count(InboundMessage.id)).where(
                        InboundMessage.status.in_(("pending", "processing"))
                    )
                )
            if not busy and not self.pipeline.active:
                await self.twilio.idle()
                return
            if loop.time() > deadline:
                async with self.services.sessions() as db:
                    query = select(InboundMessage.id, InboundMessage.status, InboundMessage.body).where(
                        InboundMessage.status.in_(("pending", "processing"))
                    )
                    rows = (await db.execute(query)).all()
                stacks = [f"{t.get_name()}: {_await_chain(t)}" for t in asyncio.all_tasks()
                          if t.get_name().startswith("worker")]
                raise AssertionError(
                    f"messages still unprocessed after {timeout_s}s: {rows}; users in progress: "
                    f"{self.pipeline.active}; tasks: {stacks}"
                )
            await asyncio.sleep(0.02)

    # --- users -------------------------------------------------------------------------------
    async def make_user(self, phone: str, mode: str = "child", language: str = "fr", **fields: Any) -> User:
        """An onboarded user who wrote recently on WhatsApp (inside the 24 h window)."""
        role = {"child": "student", "pro": "pro"}.get(mode)
        balance = fields.pop("credit_balance", self.settings.signup_credits)
        values: dict[str, Any] = {
            "phone": phone, "mode": mode, "role": role, "language": language, "onboarding_step": None,
            "last_channel": "whatsapp", "last_inbound_at": self.clock(),
            "last_whatsapp_inbound_at": self.clock(), "created_at": self.clock(),
        }
        values.update(fields)
        async with self.services.sessions() as db:
            user = User(**values)
            db.add(user)
            await db.flush()
            if balance:
                await credits.apply(db, user.id, balance, "signup", ref=f"signup:{user.id}")
            await db.commit()
            await db.refresh(user)
            return user

    def stored_path(self, key: str) -> Path:
        """Where the file store keeps `key` on disk (the tests' store is a local one)."""
        path = self.services.files.local_path(key)
        assert path is not None, key
        return path

    async def user(self, phone: str) -> User | None:
        async with self.services.sessions() as db:
            return await db.scalar(select(User).where(User.phone == phone))

    async def texts_to(self, phone: str) -> list[str]:
        """Bodies sent to `phone` on any channel, in order (a content's body as the user reads it)."""
        return [self.twilio.shown(m) for m in self.twilio.to(phone)]

    # --- jobs and workers --------------------------------------------------------------------
    async def run_jobs(self, *names: str) -> None:
        """Runs the registered periodic jobs once (all of them, or those named)."""
        from bot.cli import registered_jobs

        for job in registered_jobs():
            if not names or job.name in names:
                await run_once(self.services, job)

    async def stop_workers(self) -> None:
        await self.pipeline.stop()

    async def start_workers(self, dispatch: Any = None) -> None:
        """Starts a new pipeline (after `stop_workers`), with the real handler chain by default."""
        from bot.cli import dispatch_function, registered_jobs

        self.pipeline = Pipeline(self.services, dispatch or dispatch_function(), jobs=registered_jobs())
        await self.pipeline.start()

    async def use_dispatch(self, dispatch: Any) -> None:
        """Runs the workers with another dispatch function (tests of the pipeline itself)."""
        await self.stop_workers()
        await self.start_workers(dispatch)

    async def restart_job_workers(self) -> None:
        """Stops the job workers as a dying process would leave its jobs, then starts new ones."""
        from bot.cli import job_runner
        from bot.pipeline.job_workers import JobWorkers

        await self.job_workers.stop()
        self.job_workers = JobWorkers(self.services, job_runner())
        await self.job_workers.start()

    async def close(self) -> None:
        """Stops everything the harness started. A step that hangs is cut after CLOSE_STEP_S and
        named in the failure (a test's teardown otherwise only times out, with no clue which)."""
        steps: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            ("job workers", self.job_workers.stop if self.job_workers is not None else _nothing),
            ("pipeline", self.pipeline.stop), ("client session", self.session.close),
            ("fake Twilio", self.twilio.stop), ("web app", self.runner.cleanup),
            ("metrics app", self.metrics_runner.cleanup if self.metrics_runner is not None else _nothing),
            ("services", self.services.close), ("fake LLM", self.llm.stop)]
        hung: list[str] = []
        for name, step in steps:
            try:
                async with asyncio.timeout(CLOSE_STEP_S):
                    await step()
            except TimeoutError:
                hung.append(name)
        if hung:
            raise AssertionError(f"harness close: {', '.join(hung)} did not stop within {CLOSE_STEP_S} s")


async def _nothing() -> None:
    return None


CLOSE_STEP_S = 90.0  # under the tests' 120 s timeout: only a real hang fails, and by name


def _await_chain(task: asyncio.Task[Any]) -> list[str]:
    """Where a stuck task waits, coroutine by coroutine (for failure messages)."""
    chain: list[str] = []
    coro: Any = task.get_coro()
    while coro is not None and len(chain) < 30:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            chain.append(f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return chain


def _free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    sock.setblocking(False)
    return sock


def start_clock() -> ManualClock:
    """A harness's clock: now, or today at TEST_CLOCK_HOUR:00 UTC when set, to run the tests as at
    that hour (what is sent within the day, or at a study hour, must not pass only by daylight)."""
    hour = os.environ.get("TEST_CLOCK_HOUR")
    if not hour:
        return ManualClock()
    return ManualClock(system_now().replace(hour=int(hour), minute=0, second=0, microsecond=0))


async def start_harness(database: Database, data_dir: Path, redis_prefix: str, env: Mapping[str, str],
                        *, clock: ManualClock | None = None) -> Harness:
    from bot.cli import dispatch_function, job_runner, registered_jobs, registered_routes
    from bot.pipeline.job_workers import JobWorkers

    twilio = FakeTwilio()
    await twilio.start()
    llm = FakeLLM()
    await llm.start()
    sock = _free_socket()
    port = sock.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}"
    values = {
        "DATA_DIR": str(data_dir),
        "DATABASE_URL": database.url,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "PUBLIC_BASE_URL": base_url,
        "TWILIO_ACCOUNT_SID": twilio.account_sid,
        "TWILIO_AUTH_TOKEN": twilio.auth_token,
        "TWILIO_WHATSAPP_FROM": WHATSAPP_FROM,
        "TWILIO_SMS_FROM": SMS_FROM,
        "TWILIO_API_BASE_URL": twilio.url,
        "LLM_BASE_URL": llm.url,
        "LLM_API_KEY": "test-llm-key",
        "LLM_MODEL": "test/model",
        "SECRET_KEY": "test-secret-key-the-bot-s-own-32-characters-at-least",
        "ORG_NAME": ORG_NAME,
        "WORKER_CONCURRENCY": "8",
        "OUTBOUND_PART_WAIT_S": "1",
        "SWEEP_INTERVAL_S": "0.2",
        "WORKER_LEASE_S": "2",
        "REQUEUE_DELAY_S": "0.05",
        "TWILIO_BACKOFF_S": "0.01",
        "TWILIO_TIMEOUT_S": "5",
        # Pacing is tested on its own (tests/core/test_pacing.py); elsewhere an SMS a second would
        # only make each test with several SMS seconds longer.
        "TWILIO_SENDER_MPS": "whatsapp=100000,sms=100000",
        "JOBS_ENABLED": "false",
        # Every harness starts job workers; stopping them waits one poll (each test closes one):
        # the shortest poll there is.
        "JOB_POLL_S": "0.05",
        "AGENT_TOOL_TIMEOUT_S": "30",
        "AGENT_PROGRESS_NOTE_AFTER_S": "30",
        "LLM_TIMEOUT_S": "10",
        "LLM_RETRY_BASE_S": "0.01",
        "LOG_LEVEL": "WARNING",
        # A webhook is spooled when the database does not store it within SPOOL_AFTER_S, and settle()
        # waits for stored messages only: on a loaded machine a SQLite write held behind a turn's
        # took more than the default 5 s, and the spooled message was answered after the test
        # looked. Spooling has its own tests (tests/core/test_spool*.py), which set it low.
        "SPOOL_AFTER_S": "60",
    }
    if database.state == "redis":
        values["REDIS_URL"] = REDIS_URL
        values["REDIS_KEY_PREFIX"] = redis_prefix
    values.update({k: str(v) for k, v in env.items()})
    settings = load_settings(values)
    clock = clock or start_clock()
    services = await build_services(settings, clock=clock)
    if not await services.state.ping():
        raise RuntimeError(f"Redis does not answer at {settings.redis_url} (the postgres backend)")
    app = create_app(services, extra_routes=registered_routes())
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    pipeline = Pipeline(services, dispatch_function(), jobs=registered_jobs())
    await pipeline.start()
    job_workers = JobWorkers(services, job_runner())
    await job_workers.start()
    session = aiohttp.ClientSession()
    return Harness(
        settings=settings, services=services, twilio=twilio, llm=llm, clock=clock, base_url=base_url,
        pipeline=pipeline, runner=runner, session=session, env=dict(values), job_workers=job_workers,
    )


# --- databases: migrated once per session, then copied (SQLite) or truncated (PostgreSQL) ------


async def create_postgres_database(admin_url: str, name_prefix: str, *, durable: bool = True,
                                   revision: str = "head") -> str:
    """A new PostgreSQL database next to `admin_url`'s, migrated to `revision`; its SQLAlchemy URL.
    Not `durable`: commits do not wait for the disk (a throw-away database)."""
    import asyncpg

    from bot.storage.migrate import upgrade

    name = f"{name_prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    try:
        conn = await asyncpg.connect(admin_url, timeout=5)
    except Exception as exc:
        raise RuntimeError(f"PostgreSQL does not answer at {admin_url}: {exc!r}") from exc
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
        if not durable:
            await conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit TO off')
    finally:
        await conn.close()
    host = admin_url.split("://", 1)[1].rsplit("/", 1)[0]
    url = f"postgresql+asyncpg://{host}/{name}"
    await upgrade(url, revision)
    return url


async def drop_postgres_database(admin_url: str, url: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(admin_url, timeout=5)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
    finally:
        await conn.close()


async def migrate_template(kind: str, workdir: Path) -> str:
    from bot.storage.migrate import upgrade

    if kind == "sqlite":
        url = f"sqlite+aiosqlite:///{workdir / 'template.db'}"
        await upgrade(url)
        return url
    try:
        return await create_postgres_database(POSTGRES_ADMIN_URL, "deblo_test", durable=False)
    except RuntimeError as exc:
        raise RuntimeError(f"{exc} (the postgres backend)") from exc


async def drop_template(kind: str, url: str) -> None:
    if kind == "postgres":
        await drop_postgres_database(POSTGRES_ADMIN_URL, url)


async def fresh_database(name: str, template_url: str, workdir: Path) -> Database:
    """The test's own copy of the migrated template on backend `name` (see BACKENDS)."""
    kind, state = BACKENDS[name]
    if kind == "sqlite":
        source = Path(template_url.split(":///", 1)[1])
        target = workdir / "deblo.db"
        shutil.copyfile(source, target)
        return Database(url=f"sqlite+aiosqlite:///{target}", kind=kind, state=state)
    import asyncpg

    dsn = template_url.replace("postgresql+asyncpg://", "postgresql://")
    conn = await asyncpg.connect(dsn, timeout=5)
    try:
        await conn.execute(_EMPTY_POSTGRES)
    finally:
        await conn.close()
    return Database(url=template_url, kind=kind, state=state)


# Every table of the schema emptied, every sequence back at its start, as `TRUNCATE … RESTART
# IDENTITY CASCADE` of them all leaves it; in one round trip, truncating only the tables with rows
# (most tests fill a few: truncating the forty others each time is most of the cost).
_EMPTY_POSTGRES = """
DO $$
DECLARE
    name text;
    filled text[] := '{}';
    found boolean;
BEGIN
    FOR name IN SELECT tablename FROM pg_tables
                WHERE schemaname = 'public' AND tablename <> 'alembic_version' LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM public.%I)', name) INTO found;
        IF found THEN
            filled := filled || format('public.%I', name);
        END IF;
    END LOOP;
    IF cardinality(filled) > 0 THEN
        EXECUTE 'TRUNCATE ' || array_to_string(filled, ', ') || ' CASCADE';
    END IF;
    PERFORM setval(format('%I.%I', schemaname, sequencename), start_value, false)
        FROM pg_sequences WHERE schemaname = 'public';
END
$$
"""


async def clear_redis(prefix: str, redis_url: str = REDIS_URL) -> None:
    import redis.asyncio as aioredis

    client = aioredis.from_url(redis_url)
    try:
        keys = [k async for k in client.scan_iter(match=prefix + "*", count=500)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


__all__ = ["BACKENDS", "ORG_NAME", "Harness", "backend", "new_sid", "sign", "start_harness", "use_backend"]
