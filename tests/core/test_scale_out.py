"""Scale-out with real processes: two `serve` behind this test's round-robin and three `worker`
processes (`python -m bot serve|worker`) on PostgreSQL and Redis.

50 users send 200 messages: half of them in bursts of five without waiting, the others three
spaced out, SMS and WhatsApp mixed, a quiz and its answer in some bursts, a turn long enough to
become a background job, a reminder falling due. Meanwhile one worker is killed with SIGKILL in the
middle of a turn (its model call in flight) and one `serve` is stopped with SIGTERM and started
again; in the second test Redis itself is restarted, empty (this test's own redis-server: the
shared one is never touched). Every user gets every reply once and in order, every message ends
`done`, the quiz answer is checked right without a model call, each turn is charged once, the
reminder goes once and the job finishes with its answer once.

PostgreSQL only (marker `postgres_only`: the postgres backend only): several processes writing
at once is the PostgreSQL deployment's shape.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import func, select

from bot.clock import system_now
from bot.storage.models import (
    CreditEntry,
    ExerciseResult,
    GenerationJob,
    InboundMessage,
    OutboundMessage,
    ScheduledSend,
    Task,
)
from tests.fakes.llm import FakeLLM, Step
from tests.support.harness import SMS_FROM, WHATSAPP_FROM, Harness, backend, clear_redis, new_sid, sign
from tests.support.ports import free_port
from tests.support.processes import ROOT, RedisServer

# serial: two serves and three workers of its own, each to be ready within its wait: the machine to itself.
pytestmark = [pytest.mark.postgres_only, pytest.mark.serial, pytest.mark.timeout(240)]

USERS = 50
BURST_USERS = 25  # users 0..24 send five messages in a row; the others three, spaced out
LATE_QUIZ_USER = 45  # spaced out: their quiz is still waiting for its answer when Redis restarts
QUIZ_USERS = (3, 10, 17, LATE_QUIZ_USER)  # their second message asks for a quiz, their third answers it
JOB_USER = 48  # pro: their last message's turn outlasts AGENT_TURN_TIMEOUT_S and becomes a job
REMINDER_USER = 31
REMINDER_TITLE = "Réviser les fractions"
JOB_STEPS = 6  # tool calls of the long turn before its answer
JOB_STEP_S = 1.2  # the model's time per step of the long turn
CALL_TOKENS = 2000  # one credit per model call at TOKENS_PER_CREDIT=2000: charges count calls
TAG = re.compile(r"\bu\d{2}m\d\b")
QUIZ = {"question": "Combien font 3 × 5 ?", "options": ["12", "15", "18", "20"], "correct_index": 1,
        "explanation": "3 fois 5 font quinze.", "subject": "Maths", "topic": "multiplication"}


def phone(i: int) -> str:
    return f"+22507300000{i:02d}"


def channel(i: int) -> str:
    return "sms" if i % 2 else "whatsapp"


# --- what is sent, and what each user must get back ---------------------------------------------


def bodies(i: int) -> list[str]:
    count = 5 if i < BURST_USERS else 3
    out = [f"u{i:02d}m{n} Explique-moi la leçon numéro {n}" for n in range(count)]
    if i in QUIZ_USERS:
        out[1], out[2] = f"u{i:02d}m1 fais-moi un quiz", "2"
    if i == JOB_USER:
        out[2] = f"u{i:02d}m2 fais le bilan complet de tout le cours"
    return out


def expected(i: int) -> list[str]:
    """What user i must receive, in order: a tag is the answer naming that message."""
    labels: list[str] = []
    for body in bodies(i):
        tag = body.split()[0]
        if body == "2":
            labels.append("right")
        elif i in QUIZ_USERS and tag.endswith("m1"):
            labels.append(f"menu {tag}")  # the quiz and the model's line after it: one message
        elif i == JOB_USER and tag.endswith("m2"):
            labels += ["long", tag]
        else:
            labels.append(tag)
    return labels


def label(text: str) -> str:
    if "Combien font" in text and "Bravo" not in text and "Pas tout" not in text:
        return " ".join(["menu", *TAG.findall(text)[-1:]])
    if "Bravo, bonne réponse" in text:
        return "right"
    if "Pas tout à fait" in text:
        return "wrong"
    if "long travail" in text:
        return "long"
    if REMINDER_TITLE in text:
        return "reminder"
    found = TAG.findall(text)
    return found[-1] if found else f"other: {text[:80]}"


def model(delay_s: float) -> Callable[[dict[str, Any]], Step]:
    """The model stand-in, deciding from the request alone (any process may ask): a quiz for a
    quiz request, six cheap tool steps for the long request, else a text naming the message."""
    usage = {"prompt_tokens": CALL_TOKENS, "completion_tokens": 0, "total_tokens": CALL_TOKENS}

    def respond(body: dict[str, Any]) -> Step:
        tag, tools_done = turn_of(body)
        may_call = bool(body.get("tools")) and body.get("tool_choice") != "none"
        user = int(tag[1:3]) if tag[1:3].isdigit() else -1
        if user in QUIZ_USERS and tag.endswith("m1") and tools_done == 0 and may_call:
            return Step("tools", calls=[("interactive_quiz", QUIZ, None)], delay_s=delay_s, usage=usage)
        if user == JOB_USER and tag.endswith("m2") and tools_done < JOB_STEPS and may_call:
            return Step("tools", calls=[("list_user_files", {}, None)], delay_s=JOB_STEP_S, usage=usage)
        return Step("text", content=f"Réponse pour {tag}.", delay_s=delay_s, usage=usage)

    return respond


def turn_of(body: dict[str, Any]) -> tuple[str, int]:
    """The tag of the message a model request answers, and the tool results the turn has so far."""
    messages = body["messages"]
    last = max(n for n, m in enumerate(messages) if m["role"] == "user")
    found = TAG.findall(str(messages[last]["content"]))
    return (found[-1] if found else "untagged"), sum(1 for m in messages[last + 1:] if m["role"] == "tool")


# --- the processes --------------------------------------------------------------------------------


class Cluster:
    """Two `serve` (the first one's address is PUBLIC_BASE_URL: Twilio signs for it, whichever
    serve takes the post) and three `worker`. Worker 0 runs one turn at a time against its own model
    stand-in, so that "its model call is in flight" means "it is in the middle of that turn" and
    nothing else it holds is half-sent when it is killed."""

    def __init__(self, h: Harness, tmp_path: Path, redis_url: str, prefix: str, victim_llm: str) -> None:
        self.ports = [free_port(), free_port()]
        self.urls = [f"http://127.0.0.1:{p}" for p in self.ports]
        self.public = self.urls[0]
        self.victim_llm = victim_llm
        self.cwd, self.logs = tmp_path, tmp_path / "logs"
        self.logs.mkdir(exist_ok=True)
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("TEST_")}, **h.env,
                    "PYTHONPATH": str(ROOT), "HOST": "127.0.0.1", "PUBLIC_BASE_URL": self.public,
                    "REDIS_URL": redis_url, "REDIS_KEY_PREFIX": prefix, "LOG_LEVEL": "ERROR",
                    "WORKER_LEASE_S": "2", "WORKER_CONCURRENCY": "4", "JOBS_ENABLED": "true",
                    "REMINDER_LEAD_MINUTES": "0", "TOKENS_PER_CREDIT": str(CALL_TOKENS),
                    "AGENT_TURN_TIMEOUT_S": "3", "AGENT_FINAL_RESERVE_S": "1", "AGENT_TOOL_TIMEOUT_S": "10",
                    "JOB_LEASE_S": "1", "JOB_SWEEP_INTERVAL_S": "1", "JOB_BROKER_HEARTBEAT_TIMEOUT_S": "3",
                    "JOB_BROKER_MAINTENANCE_CHANCE": "1000000", "JOB_CONCURRENCY": "2"}
        self.serves: list[subprocess.Popen[bytes]] = []
        self.workers: list[subprocess.Popen[bytes]] = []

    def spawn(self, name: str, command: str, **env: str) -> subprocess.Popen[bytes]:
        with open(self.logs / f"{name}.log", "ab") as log:
            return subprocess.Popen([sys.executable, "-m", "bot", command], cwd=self.cwd,
                                    env={**self.env, **env}, stdout=log, stderr=subprocess.STDOUT)

    async def start(self) -> None:
        self.serves = [self.spawn(f"serve{n}", "serve", PORT=str(p)) for n, p in enumerate(self.ports)]
        self.workers = [self.spawn("worker0", "worker", WORKER_CONCURRENCY="1", LLM_BASE_URL=self.victim_llm)]
        self.workers += [self.spawn(f"worker{n}", "worker") for n in (1, 2)]
        await asyncio.gather(*(self.ready(n) for n in range(len(self.serves))))

    async def ready(self, n: int) -> None:
        # Five processes start at once on two cores, each importing the document libraries: a
        # serve's start was seen past 15 s on a loaded machine. A readiness wait, not a time limit.
        async with aiohttp.ClientSession() as session:
            for _ in range(1200):
                try:
                    async with session.get(self.urls[n] + "/readyz") as resp:
                        if resp.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                assert self.serves[n].poll() is None, f"serve {n} exited:\n{self.tail(f'serve{n}')}"
                await asyncio.sleep(0.05)
        raise AssertionError(f"serve {n} did not become ready:\n{self.tail(f'serve{n}')}")

    async def restart_serve(self, n: int) -> None:
        self.serves[n].send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(self.serves[n].wait, 30)
        assert code == 0, f"serve {n} ended with {code} on SIGTERM:\n{self.tail(f'serve{n}')}"
        self.serves[n] = self.spawn(f"serve{n}", "serve", PORT=str(self.ports[n]))
        await self.ready(n)

    def kill_worker(self, n: int) -> None:
        self.workers[n].send_signal(signal.SIGKILL)  # no cleanup: its lock and leases are left behind
        self.workers[n].wait()

    def tail(self, name: str, lines: int = 40) -> str:
        path = self.logs / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def stop(self) -> None:
        procs = [*self.workers, *self.serves]
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@dataclass
class RoundRobin:
    """The load balancer: posts alternate between the serves; a post a serve does not take (it is
    stopping or down) goes to the other with the same MessageSid, as Twilio retries."""

    cluster: Cluster
    auth_token: str
    account_sid: str
    turn: int = 0
    posted: int = 0
    retried: int = 0
    served: list[int] = field(default_factory=lambda: [0, 0])

    def params(self, i: int, body: str) -> dict[str, str]:
        sid = new_sid()
        address = f"whatsapp:{phone(i)}" if channel(i) == "whatsapp" else phone(i)
        params = {"MessageSid": sid, "SmsMessageSid": sid, "SmsSid": sid, "AccountSid": self.account_sid,
                  "From": address, "To": WHATSAPP_FROM if channel(i) == "whatsapp" else SMS_FROM,
                  "Body": body, "NumMedia": "0", "NumSegments": "1", "ApiVersion": "2010-04-01"}
        if channel(i) == "whatsapp":
            params["WaId"] = phone(i)[1:]
        return params

    async def post(self, session: aiohttp.ClientSession, i: int, body: str) -> None:
        params = self.params(i, body)
        signed_url = self.cluster.public + "/twilio/inbound"
        headers = {"X-Twilio-Signature": sign(self.auth_token, signed_url, params)}
        for _ in range(200):
            n = self.turn % len(self.cluster.urls)
            self.turn += 1
            try:
                async with session.post(self.cluster.urls[n] + "/twilio/inbound", data=params,
                                        headers=headers, timeout=aiohttp.ClientTimeout(total=15)) as resp:
                    await resp.read()
                    if resp.status == 200:
                        self.posted += 1
                        self.served[n] += 1
                        return
            except (aiohttp.ClientError, TimeoutError):
                pass
            self.retried += 1
            await asyncio.sleep(0.05)
        raise AssertionError(f"no serve took {body!r}")


async def send_all(rr: RoundRobin) -> None:
    """Every user's messages: a burst user posts five in a row, each as soon as the previous one got
    its 200; the others pause between theirs. Users start staggered over about eight seconds."""

    async def one(session: aiohttp.ClientSession, i: int) -> None:
        spaced = i >= BURST_USERS
        await asyncio.sleep((i - BURST_USERS if spaced else i) * 0.32)
        for n, body in enumerate(bodies(i)):
            await rr.post(session, i, body)
            if spaced:
                await asyncio.sleep(0.8 + 0.4 * (n % 2))

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(one(session, i) for i in range(USERS)))


async def until(check: Callable[[], Awaitable[bool] | bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if await result if isinstance(result, Awaitable) else result:
            return
        assert time.monotonic() < deadline, f"{what}: not after {timeout_s} s"
        await asyncio.sleep(0.005)


# --- the two runs -----------------------------------------------------------------------------------


@dataclass
class Run:
    h: Harness
    cluster: Cluster
    rr: RoundRobin
    victim_llm: FakeLLM
    redis: RedisServer


@pytest.fixture
async def scale_run(make_harness: Any, tmp_path: Path) -> AsyncIterator[Run]:
    if backend()[0] != "postgres":
        pytest.fail("tests/core/test_scale_out.py needs PostgreSQL: it runs on the postgres backend only "
                    "(marker postgres_only)")
    redis = RedisServer(free_port(), tmp_path)  # this test's own: it restarts it
    redis.start()
    redis_url = f"redis://127.0.0.1:{redis.port}/0"
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    h = await make_harness(REDIS_URL=redis_url, REDIS_KEY_PREFIX=prefix)
    await h.stop_workers()  # only the processes work
    await h.job_workers.stop()
    h.job_workers = None
    victim_llm = FakeLLM()
    await victim_llm.start()
    h.llm.responder, victim_llm.responder = model(0.3), model(0.6)
    cluster = Cluster(h, tmp_path, redis_url, prefix, victim_llm.url)
    rr = RoundRobin(cluster, h.settings.twilio_auth_token, h.settings.twilio_account_sid)
    try:
        await make_users(h)
        yield Run(h, cluster, rr, victim_llm, redis)
    finally:
        cluster.stop()
        await victim_llm.stop()
        await clear_redis(prefix)  # the shared Redis, should the harness have written there
        redis.stop()


async def make_users(h: Harness) -> None:
    for i in range(USERS):
        pro = i == JOB_USER
        await h.make_user(phone(i), mode="pro" if pro else "child", credit_balance=100)
    user = await h.user(phone(REMINDER_USER))
    assert user is not None
    async with h.services.sessions() as db:
        db.add(Task(user_id=user.id, title=REMINDER_TITLE, due_at=system_now() + timedelta(seconds=8),
                    created_at=system_now()))
        await db.commit()


async def test_two_serves_three_workers_one_killed_one_restarted(scale_run: Run) -> None:
    run = scale_run
    started = time.monotonic()
    await run.cluster.start()
    traffic = asyncio.create_task(send_all(run.rr))
    killed = await kill_mid_turn(run)
    await until(lambda: run.rr.posted >= 110, 60, "110 messages posted")
    await run.cluster.restart_serve(1)
    await traffic
    await until_all_answered(run)
    await check_outcome(run, killed=killed)
    assert run.rr.served[1] > 0 and run.rr.served[0] > 0
    print(f"scale-out run: {time.monotonic() - started:.1f} s, {run.rr.retried} posts sent again")


async def test_same_traffic_with_redis_restarted(scale_run: Run) -> None:
    run = scale_run
    started = time.monotonic()
    await run.cluster.start()
    traffic = asyncio.create_task(send_all(run.rr))
    await until(lambda: quiz_pending(run), 60, f"user {LATE_QUIZ_USER}'s quiz sent")
    assert run.rr.posted >= 60
    run.redis.stop()  # everything in Redis is lost: queue, locks, leases, the job broker's messages
    await asyncio.sleep(1.0)
    run.redis.start()
    await traffic
    await until_all_answered(run)
    await check_outcome(run, killed=None)
    print(f"Redis restart run: {time.monotonic() - started:.1f} s, {run.rr.retried} posts sent again")


def quiz_pending(run: Run) -> bool:
    """User 45 has their quiz and has not answered it yet."""
    got = [label(run.h.twilio.shown(m)) for m in run.h.twilio.to(phone(LATE_QUIZ_USER))]
    assert "right" not in got
    return any(g.startswith("menu") for g in got)


async def kill_mid_turn(run: Run) -> str:
    """Kills worker 0 while its model call for a message is in flight (the turn's first call: it
    has sent nothing for that message yet); returns that message's tag."""
    await until(lambda: run.rr.posted >= 50, 60, "50 messages posted")
    seen = len(run.victim_llm.requests)
    victim: list[str] = []

    def in_flight() -> bool:
        nonlocal seen
        new, seen = run.victim_llm.requests[seen:], len(run.victim_llm.requests)
        for body in new:
            tag, tools_done = turn_of(body)
            if TAG.fullmatch(tag) and int(tag[1:3]) != JOB_USER and tools_done == 0:
                run.cluster.kill_worker(0)
                victim.append(tag)
                return True
        return False

    await until(in_flight, 30, "worker 0 in the middle of a turn")
    async with run.h.services.sessions() as db:
        row = await db.scalar(select(InboundMessage).where(InboundMessage.body.startswith(victim[0] + " ")))
    assert row is not None and row.status == "processing", row
    return victim[0]


async def until_all_answered(run: Run) -> None:
    h = run.h

    async def done() -> bool:
        async with h.services.sessions() as db:
            busy = await db.scalar(select(func.count(InboundMessage.id))
                                   .where(InboundMessage.status.in_(("pending", "processing"))))
            total = await db.scalar(select(func.count(InboundMessage.id)))
            job = await db.scalar(select(GenerationJob.status))
            reminder = await db.scalar(select(ScheduledSend.status))
        return total == 200 and not busy and job == "completed" and reminder == "sent"

    try:
        await until(done, 75, "every message answered, the job completed and the reminder sent")
    except AssertionError:
        names = sorted(p.stem for p in run.cluster.logs.glob("*.log"))
        logs = "\n".join(f"--- {name}\n{run.cluster.tail(name)}" for name in names)
        raise AssertionError(f"not answered in time; the processes' logs:\n{logs}") from None
    await h.twilio.idle()


# --- what must hold afterwards ---------------------------------------------------------------------


async def check_outcome(run: Run, killed: str | None) -> None:
    h = run.h
    async with h.services.sessions() as db:
        rows = list((await db.scalars(select(InboundMessage).order_by(InboundMessage.id))).all())
        keys = list((await db.scalars(select(OutboundMessage.idempotency_key))).all())
    assert len(rows) == 200 and {r.status for r in rows} == {"done"}, \
        [(r.id, r.body, r.status, r.error) for r in rows if r.status != "done"]
    assert len(keys) == len(set(keys))
    for i in range(USERS):  # every reply once, in order, nothing else (no apology, no "interrupted")
        got = [label(t) for t in await h.texts_to(phone(i))]
        assert [x for x in got if x != "reminder"] == expected(i), (i, await h.texts_to(phone(i)))
    if killed is not None:
        row = next(r for r in rows if r.body.startswith(killed + " "))
        assert row.attempts == 2, (killed, row.attempts)
    await check_quizzes(run)
    await check_credits(h, rows)
    await check_reminder_and_job(h)


async def check_quizzes(run: Run) -> None:
    h = run.h
    async with h.services.sessions() as db:
        results = list((await db.scalars(select(ExerciseResult))).all())
    users = {u.id: i for i in QUIZ_USERS if (u := await h.user(phone(i))) is not None}
    assert sorted(users.get(r.user_id, -1) for r in results) == sorted(QUIZ_USERS)
    assert all(r.correct and r.source == "quiz" for r in results)
    # The answer "2" was checked on the server: no model request ever answered it.
    requests = [*h.llm.requests, *run.victim_llm.requests]
    assert not [b for b in requests if turn_of(b)[0] == "untagged"]


async def check_credits(h: Harness, rows: list[InboundMessage]) -> None:
    """Each turn charged once: the message's last run paid one credit per model call it made; a run
    cut short paid only for calls that returned (none, for the one killed in flight)."""
    async with h.services.sessions() as db:
        entries = await db.scalars(select(CreditEntry).where(CreditEntry.reason == "usage"))
        usage = {e.ref: -e.delta for e in entries}
        job = await db.scalar(select(GenerationJob))
    assert job is not None
    for row in rows:
        tag = row.body.split()[0]
        user = int(tag[1:3]) if TAG.fullmatch(tag) else -1
        final = sum(v for k, v in usage.items() if k and k.startswith(f"turn:{row.id}:{row.attempts}:"))
        earlier = sum(v for k, v in usage.items() if k and k.startswith(f"turn:{row.id}:")) - final
        if row.body == "2":
            assert final + earlier == 0
        elif user == JOB_USER and tag.endswith("m2"):
            in_job = sum(v for k, v in usage.items() if k and k.startswith(f"job:{job.id}:"))
            assert final + in_job == job.state["model_calls"] == JOB_STEPS + 1, (final, in_job, job.state)
        else:
            calls = 2 if user in QUIZ_USERS and tag.endswith("m1") else 1
            assert final == calls and earlier <= calls * (row.attempts - 1), (row.body, final, earlier)


async def check_reminder_and_job(h: Harness) -> None:
    async with h.services.sessions() as db:
        sends = list((await db.scalars(select(ScheduledSend))).all())
        job = await db.scalar(select(GenerationJob))
    assert [(s.kind, s.status, s.attempts) for s in sends] == [("reminder_due", "sent", 1)]
    assert len([t for t in await h.texts_to(phone(REMINDER_USER)) if REMINDER_TITLE in t]) == 1
    assert job is not None and job.status == "completed" and job.result_text == f"Réponse pour u{JOB_USER}m2."
