"""Scale-out: one `serve` and 1, 2 then 4 `worker` processes under the same offered load.

    .venv/bin/python -m bench.scale [--rate 10] [--seconds 20] [--users 100] [--workers 1,2,4] [--warmup 3]
    .venv/bin/python -m bench.scale --background [--rate 8] [--workers 1] [--tasks 500]

(--background: chat beside a background batch, and a worker's start; bench/scale/background.py.)

Real processes (`python -m bot serve|worker`) on PostgreSQL and Redis, a fresh database for each
row. The model is stood in at a fixed latency (--llm-latency, 1 s) and three calls per turn: two
calls of a cheap tool (list_user_files), then the answer naming the message; Twilio is stood in
locally too (tests/fakes), status callbacks included. The load is open: message k leaves at
k / rate whatever the replies, from --users users in turn. Before it, --warmup seconds of the same
load from other users warm each deployment up (pools connected, every path run once), as
long-running processes are; that part is not measured. Measured per row:
- replies per second: replies / (last reply − first reply), the rate at which answers come out;
- p50 / p95 time-to-reply: from the webhook post to the reply's create call at the fake Twilio;
- CPU seconds per reply: user + system time of the serve and worker processes (from /proc) over
  the measured run, divided by the replies; the serve's share; and, apart, this process's own (the
  model and Twilio stand-ins and the load, which share the cores). PostgreSQL's and Redis's are not
  counted;
- doubled: answers sent twice for one message (warm-up included); anything but 0 is a bug;
- transactions and statements per reply: the processes' deblo_db_transactions_total and
  deblo_db_statements_total (each on its own METRICS_PORT) over the measured run, per reply.
Aim: throughput that grows with workers until the cores are saturated, and p95 within 10 % of the
model's own time for the turn (3 × the latency), printed beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from bench.compare import Figure, add_arguments, compare, report  # noqa: E402
from tests.fakes.llm import FakeLLM, Step  # noqa: E402
from tests.fakes.twilio import FakeTwilio  # noqa: E402
from tests.support.harness import clear_redis, create_postgres_database, drop_postgres_database  # noqa: E402

WHATSAPP_FROM = "whatsapp:+14155238886"
TOOL_CALLS = 2  # per turn, before the answer: three model calls in all
TAG = re.compile(r"\bb\d{5}\b")
WARMUP_FIRST = 90_000  # the warm-up's message numbers: apart from the measured ones
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process (fields 14 and 15 of /proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def model(latency_s: float) -> Any:
    """Two calls of a cheap tool, then the answer naming the message; each call takes latency_s."""

    def respond(body: dict[str, Any]) -> Step:
        messages = body["messages"]
        last = max(n for n, m in enumerate(messages) if m["role"] == "user")
        found = TAG.findall(str(messages[last]["content"]))
        done = sum(1 for m in messages[last + 1:] if m["role"] == "tool")
        if done < TOOL_CALLS and body.get("tools") and body.get("tool_choice") != "none":
            return Step("tools", calls=[("list_user_files", {}, None)], delay_s=latency_s)
        return Step("text", content=f"Réponse pour {found[-1] if found else '?'}.", delay_s=latency_s)

    return respond


# --- one deployment: a database, the processes, the users ------------------------------------------


def phone(n: int) -> str:
    return f"+2250740{n:06d}"


async def make_users(database_url: str, users: int) -> None:
    """Onboarded pupils who wrote recently, with credits for the whole run."""
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

    from bot.billing import credits
    from bot.clock import system_now
    from bot.storage.models import User

    engine = create_async_engine(database_url)
    now = system_now()
    try:
        async with async_sessionmaker(engine, expire_on_commit=False)() as db:
            for n in range(users):
                user = User(phone=phone(n), mode="child", role="student", language="fr", onboarding_step=None,
                            last_channel="whatsapp", last_inbound_at=now, last_whatsapp_inbound_at=now,
                            created_at=now)
                db.add(user)
                await db.flush()
                await credits.apply(db, user.id, 10_000, "signup", ref=f"signup:{user.id}")
            await db.commit()
    finally:
        await engine.dispose()


@dataclass
class Deployment:
    env: dict[str, str]
    url: str
    logs: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    metrics_ports: list[int] = field(default_factory=list)
    spawned: list[float] = field(default_factory=list)  # each process's spawn (monotonic)
    ready_s: list[float] = field(default_factory=list)  # each worker's spawn to « worker started »

    def spawn(self, name: str, command: str) -> None:
        # Each process serves its own counters (database transactions and statements among them).
        self.metrics_ports.append(free_port())
        env = {**self.env, "METRICS_PORT": str(self.metrics_ports[-1])}
        self.spawned.append(time.monotonic())
        with open(self.logs / f"{name}.log", "ab") as log:
            self.procs.append(subprocess.Popen([sys.executable, "-m", "bot", command], cwd=self.logs,
                                               env=env, stdout=log, stderr=subprocess.STDOUT))

    async def db_counts(self) -> tuple[float, float]:
        """Database transactions and statements so far, summed over the processes' /metrics."""
        totals = [0.0, 0.0]
        async with aiohttp.ClientSession() as session:
            for port in self.metrics_ports:
                async with session.get(f"http://127.0.0.1:{port}/metrics") as resp:
                    text = await resp.text()
                for i, name in enumerate(("deblo_db_transactions_total", "deblo_db_statements_total")):
                    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
                    totals[i] += float(found.group(1)) if found else 0.0
        return totals[0], totals[1]

    async def start(self, workers: int) -> None:
        self.spawn("serve", "serve")
        for n in range(workers):
            self.spawn(f"worker{n}", "worker")
        ready: dict[int, float] = {}
        async with aiohttp.ClientSession() as session:
            for _ in range(1200):
                # A worker is up once it says so (LOG_LEVEL INFO, the default).
                logs = [(self.logs / f"worker{n}.log").read_bytes() for n in range(workers)]
                for n, log in enumerate(logs):
                    if n not in ready and b"worker started" in log:
                        ready[n] = time.monotonic() - self.spawned[n + 1]
                if len(ready) == workers and await self._ready(session):
                    self.ready_s = [ready[n] for n in range(workers)]
                    return
                dead = [p.args for p in self.procs if p.poll() is not None]
                if dead:
                    raise RuntimeError(f"exited at start: {dead}; logs in {self.logs}")
                await asyncio.sleep(0.05)
        raise RuntimeError(f"the deployment did not start; logs in {self.logs}")

    async def _ready(self, session: aiohttp.ClientSession) -> bool:
        try:
            async with session.get(self.url + "/readyz") as resp:
                return resp.status == 200
        except aiohttp.ClientError:
            return False

    def cpu(self) -> tuple[float, float, float]:
        """CPU seconds so far: the serve's, the workers', and this process's (the stand-ins and the load)."""
        own = resource.getrusage(resource.RUSAGE_SELF)
        return (cpu_seconds(self.procs[0].pid), sum(cpu_seconds(p.pid) for p in self.procs[1:]),
                own.ru_utime + own.ru_stime)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# --- the load and what it measures ----------------------------------------------------------------


def webhook(n: int, sender: int, account_sid: str) -> dict[str, str]:
    sid = f"SM{n:08d}{secrets.token_hex(12)}"
    number = phone(sender)
    return {"MessageSid": sid, "SmsMessageSid": sid, "SmsSid": sid, "AccountSid": account_sid,
            "From": f"whatsapp:{number}", "To": WHATSAPP_FROM, "WaId": number[1:], "NumMedia": "0",
            "Body": f"b{n:05d} Explique-moi les fractions, s'il te plaît", "ApiVersion": "2010-04-01"}


def load(first: int, total: int, senders: range, account_sid: str) -> list[dict[str, str]]:
    """Messages `first`… (`total` of them), from `senders` in turn."""
    return [webhook(first + k, senders[k % len(senders)], account_sid) for k in range(total)]


async def offer_load(url: str, auth_token: str, rate: float, forms: list[dict[str, str]]) -> dict[str, float]:
    """Posts the signed webhooks, message k at k / rate (open loop); returns each message's tag and
    the monotonic time its post left."""
    from twilio.request_validator import RequestValidator

    validator = RequestValidator(auth_token)
    signatures = [validator.compute_signature(url + "/twilio/inbound", form) for form in forms]
    posted: dict[str, float] = {}
    loop = asyncio.get_running_loop()
    start = loop.time() + 0.1
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one(k: int) -> None:
            await asyncio.sleep(max(0.0, start + k / rate - loop.time()))
            posted[TAG.findall(forms[k]["Body"])[0]] = time.monotonic()
            async with session.post(url + "/twilio/inbound", data=forms[k],
                                    headers={"X-Twilio-Signature": signatures[k]}) as resp:
                await resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"webhook answered {resp.status}")

        await asyncio.gather(*(one(k) for k in range(len(forms))))
    return posted


def replies(twilio: FakeTwilio) -> dict[str, float]:
    """Each message's tag and the monotonic time the fake Twilio took its reply."""
    created = {sid: at for at, kind, sid in twilio.events if kind == "created"}
    out: dict[str, float] = {}
    for message in list(twilio.sent):
        found = TAG.findall(message.get("Body", ""))
        if found and message.get("Body", "").startswith("Réponse pour"):
            out.setdefault(found[-1], created[message["Sid"]])
    return out


def doubled(twilio: FakeTwilio) -> int:
    """Answers sent more than once for the same message (there should be none)."""
    tags = [TAG.findall(m["Body"])[-1] for m in list(twilio.sent)
            if m.get("Body", "").startswith("Réponse pour") and TAG.findall(m["Body"])]
    return len(tags) - len(set(tags))


async def until_replied(twilio: FakeTwilio, expected: set[str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while missing := expected - set(replies(twilio)):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(missing)} of {len(expected)} unanswered after {timeout_s:.0f} s")
        await asyncio.sleep(0.05)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def deployment_env(tmp: str, database_url: str, prefix: str, port: int, args: argparse.Namespace,
                   llm: FakeLLM, twilio: FakeTwilio) -> dict[str, str]:
    """The settings of every process: the defaults, but for where things are."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DATA_DIR": tmp, "DATABASE_URL": database_url,
           "REDIS_URL": args.redis_url, "REDIS_KEY_PREFIX": prefix, "HOST": "127.0.0.1", "PORT": str(port),
           "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}", "TWILIO_ACCOUNT_SID": twilio.account_sid,
           "TWILIO_AUTH_TOKEN": twilio.auth_token, "TWILIO_WHATSAPP_FROM": WHATSAPP_FROM,
           "TWILIO_API_BASE_URL": twilio.url, "LLM_BASE_URL": llm.url, "LLM_API_KEY": "bench-llm-key",
           "LLM_MODEL": "bench/model", "SECRET_KEY": secrets.token_hex(16)}
    if args.worker_concurrency:
        env["WORKER_CONCURRENCY"] = str(args.worker_concurrency)
    return env


async def measure(workers: int, args: argparse.Namespace, llm: FakeLLM,
                  twilio: FakeTwilio) -> dict[str, float]:
    database_url = await create_postgres_database(args.database_admin_url, "deblo_bench")
    prefix = f"bench:{uuid.uuid4().hex[:12]}:"
    total, warm = int(args.rate * args.seconds), int(args.rate * args.warmup)
    # The warm-up's senders come after the measured ones: the measured users' first message is
    # still their first.
    await make_users(database_url, args.users + min(warm, args.users))
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        env = deployment_env(tmp, database_url, prefix, port, args, llm, twilio)
        deployment = Deployment(env, f"http://127.0.0.1:{port}", Path(tmp))
        try:
            await deployment.start(workers)
            if warm:
                senders = range(args.users, args.users + min(warm, args.users))
                warmed = await offer_load(deployment.url, twilio.auth_token, args.rate,
                                          load(WARMUP_FIRST, warm, senders, twilio.account_sid))
                await until_replied(twilio, set(warmed), args.warmup + args.drain)
                await twilio.idle()
            twice_before = doubled(twilio)
            twilio.sent.clear()
            twilio.events.clear()
            cpu_before = deployment.cpu()
            counts_before = await deployment.db_counts()
            posted = await offer_load(deployment.url, twilio.auth_token, args.rate,
                                      load(0, total, range(args.users), twilio.account_sid))
            await until_replied(twilio, set(posted), args.seconds + args.drain)
            await twilio.idle()
            twice = twice_before + doubled(twilio)
            cpu = [after - before for after, before in zip(deployment.cpu(), cpu_before, strict=True)]
            counts = [after - before for after, before in zip(await deployment.db_counts(), counts_before,
                                                              strict=True)]
        finally:
            deployment.stop()
            await clear_redis(prefix, args.redis_url)
            await drop_postgres_database(args.database_admin_url, database_url)
    got = {tag: at for tag, at in replies(twilio).items() if tag in posted}
    waits = [got[tag] - at for tag, at in posted.items()]
    span = max(got.values()) - min(got.values())
    return {"workers": workers, "replies": len(got), "rps": len(got) / span, "p50": percentile(waits, 0.5),
            "p95": percentile(waits, 0.95), "cpu": (cpu[0] + cpu[1]) / len(got), "serve": cpu[0] / len(got),
            "stand_ins": cpu[2] / len(got), "twice": twice,
            "txn": counts[0] / len(got), "stmt": counts[1] / len(got)}


def figures(workers: list[int]) -> dict[str, Figure]:
    """Per row (w1, w2…): replies/s, p50, p95, CPU per reply, answers sent twice."""
    per_row = {"rps": Figure("replies/s", True), "p50": Figure("p50 s", False), "p95": Figure("p95 s", False),
               "cpu": Figure("CPU s/reply", False, 3), "twice": Figure("doubled", False, 0)}
    return {f"{key}_w{n}": Figure(f"{f.label} w{n}", f.higher_is_better, f.digits)
            for n in workers for key, f in per_row.items()}


async def main_async(args: argparse.Namespace) -> None:
    load_before = os.getloadavg()[0]  # the cores may be shared: said beside the table
    llm, twilio = FakeLLM(), FakeTwilio()
    llm.responder = model(args.llm_latency)
    await llm.start()
    await twilio.start()
    try:
        rows = [await measure(n, args, llm, twilio) for n in args.workers]
    finally:
        await twilio.stop()
        await llm.stop()
    if args.json:
        report("bench.scale", figures(args.workers), {f"{k}_w{r['workers']}": r[k] for r in rows for k in r})
        return
    turn_s = (TOOL_CALLS + 1) * args.llm_latency
    print(f"\nScale-out benchmark (PostgreSQL + Redis, one serve, {os.cpu_count()} CPUs; offered "
          f"{args.rate:g} messages/s for {args.seconds:g} s from {args.users} users after {args.warmup:g} s "
          f"of warm-up; 1-minute load "
          f"average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after)")
    print(f"the model's own time for a turn: {TOOL_CALLS + 1} calls × {args.llm_latency:g} s = "
          f"{turn_s:g} s\n")
    print(f"{'workers':>7}{'replies':>9}{'replies/s':>11}{'p50 s':>8}{'p95 s':>8}{'p95/turn':>10}"
          f"{'CPU s/reply':>13}{'of it serve':>13}{'stand-ins':>11}{'doubled':>9}{'txn/reply':>11}"
          f"{'stmt/reply':>12}")
    for r in rows:
        print(f"{r['workers']:>7}{r['replies']:>9.0f}{r['rps']:>11.2f}{r['p50']:>8.2f}{r['p95']:>8.2f}"
              f"{r['p95'] / turn_s:>10.2f}{r['cpu']:>13.3f}{r['serve']:>13.3f}{r['stand_ins']:>11.3f}"
              f"{r['twice']:>9.0f}{r['txn']:>11.1f}{r['stmt']:>12.1f}")
    print(f"\naim: replies/s growing with workers until the cores are saturated; p95 within 10 % of "
          f"{turn_s:g} s (p95/turn <= 1.10)")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=None,
                        help="messages per second offered (10; 8 with --background)")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the load is offered")
    parser.add_argument("--users", type=int, default=100, help="distinct senders, taking turns")
    parser.add_argument("--warmup", type=float, default=3.0,
                        help="seconds of the same load from other users before measuring (0: none)")
    parser.add_argument("--workers", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4],
                        help="worker processes per row (comma-separated)")
    parser.add_argument("--llm-latency", type=float, default=1.0, help="seconds per model call")
    parser.add_argument("--worker-concurrency", type=int, default=0,
                        help="WORKER_CONCURRENCY of each worker (default: the setting's default)")
    parser.add_argument("--drain", type=float, default=120.0, help="seconds allowed for the last replies")
    parser.add_argument("--database-admin-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--background", action="store_true",
                        help="chat alone against chat beside a background batch, a worker's start and "
                             "memory, first against tenth message (bench/scale/background.py)")
    parser.add_argument("--tasks", type=int, default=500,
                        help="with --background: library files in the batch")
    parser.add_argument("--index-interval", type=float, default=1.0,
                        help="with --background: LIBRARY_INDEX_INTERVAL_S of the deployment")
    parser.add_argument("--bot-root", default="",
                        help="with --background: run the processes from this checkout (a baseline)")
    add_arguments(parser)
    args = parser.parse_args()
    if args.rate is None:
        args.rate = 8.0 if args.background else 10.0
    if args.background and not args.worker_concurrency:
        # 8 messages a second of 3-second turns are 24 turns at once: set for both sides of a
        # --bot-root comparison, since a checkout whose default was 16 queued them, and the queue,
        # not the background batch, made its p95.
        args.worker_concurrency = 32
    if args.background:
        from bench.scale import background

        asyncio.run(background.main_async(args))
    elif not compare(args, "bench.scale", figures(args.workers)):
        asyncio.run(main_async(args))
