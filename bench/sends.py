"""Paced sends: `python -m bench.sends`.

Queues `--messages` messages (10,000) to `--learners` learners (2,000), each learner's in order,
through the bot's send path (`send_to_user`: outbox rows, pacing, Twilio's client, the outbox for
what Twilio refuses) to the Twilio stand-in (tests/fakes/twilio.py), which takes at most
`--twilio-mps` messages a second from the WhatsApp sender (80, Twilio's default) and answers the
others 429 / 20429. The bot paces the sender at TWILIO_SENDER_MPS (`--mps`, 80). On SQLite one
process sends everything (its schedule in memory); on PostgreSQL `--processes` processes (2) send a
share each, their schedule shared in Redis. `--unpaced` adds a row of the same without pacing.

Per row: the rate achieved (messages the stand-in took a second, first to last), the most it took
in one second, its refusals (20429), the duplicates (bodies taken more than once: always 0), the
messages out of order for their learner, the expired (dropped past SEND_MAX_AGE_S) and the oldest
delivery (from the moment every message was queued to the last taken).

    python -m bench.sends [--messages 10000] [--learners 2000] [--mps 80] [--twilio-mps 80]
                          [--processes 2] [--only sqlite|postgres] [--unpaced]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import func, select  # noqa: E402

from bench.scale.run import make_users  # noqa: E402  (pupils who wrote a moment ago, on WhatsApp)
from tests.fakes.twilio import FakeTwilio  # noqa: E402
from tests.support.harness import (  # noqa: E402
    POSTGRES_ADMIN_URL,
    REDIS_URL,
    clear_redis,
    create_postgres_database,
    drop_postgres_database,
)

WHATSAPP_FROM = "whatsapp:+14155238886"
BODY = re.compile(r"^Rappel (\d+)/(\d+) pour (\+\d+)")
# Learners sent to at once per process: about a worker's turns at once (WORKER_CONCURRENCY); many
# more only queue for the database's connections (20 + 20 per process) instead of for the pace.
CONCURRENCY = 32


# --- a sending process ---------------------------------------------------------------------------


async def _learner(services: Any, user: Any, count: int, gate: asyncio.Semaphore) -> Counter[str]:
    from bot.channel.outbound import send_to_user

    outcomes: Counter[str] = Counter()
    async with gate:
        for n in range(count):
            result = await send_to_user(services, user, text=f"Rappel {n + 1}/{count} pour {user.phone}")
            outcomes[result.reason or "ok"] += 1
    return outcomes


async def _waiting(services: Any) -> int:
    from bot.storage.models import OutboundMessage

    async with services.sessions() as db:
        return int(await db.scalar(select(func.count()).select_from(OutboundMessage).where(
            OutboundMessage.sid.is_(None), OutboundMessage.status.in_(("queued", "sending")))) or 0)


async def _drained(services: Any) -> None:
    """Returns once nothing waits in the outbox (what Twilio refused, sent again by `run_outbox`)."""
    for _ in range(36_000):
        if not await _waiting(services):
            return
        await asyncio.sleep(0.2)  # the rows are the outbox task's, read from the database
    raise RuntimeError("the outbox did not drain in 2 h")


async def child(index: int, processes: int, messages: int) -> None:
    """Sends this process's share (learners whose number modulo `processes` is `index`), runs the
    outbox until nothing waits in it, then prints what happened as one JSON line."""
    from bot.channel.outbound import run_outbox
    from bot.config import load_settings
    from bot.services import build_services
    from bot.storage.models import User

    services = await build_services(load_settings())
    try:
        async with services.sessions() as db:
            users = list((await db.scalars(select(User).order_by(User.id))).all())
        per = messages // len(users)
        mine = [u for n, u in enumerate(users) if n % processes == index]
        stopping = asyncio.Event()
        outbox = asyncio.create_task(run_outbox(services, stopping))
        gate = asyncio.Semaphore(CONCURRENCY)
        queued_at = time.time()  # every message of this process is queued from now on
        totals: Counter[str] = Counter()
        for outcomes in await asyncio.gather(*(_learner(services, u, per, gate) for u in mine)):
            totals.update(outcomes)
        await _drained(services)
        stopping.set()
        await outbox
        print(json.dumps({"queued_at": queued_at, "outcomes": dict(totals)}), flush=True)
    finally:
        await services.close()


# --- the run ---------------------------------------------------------------------------------------


def _env(database_url: str, tmp: str, twilio: FakeTwilio, mps: int,
         redis_prefix: str | None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DATA_DIR": tmp, "DATABASE_URL": database_url,
           "PUBLIC_BASE_URL": "http://127.0.0.1:9", "TWILIO_ACCOUNT_SID": twilio.account_sid,
           "TWILIO_AUTH_TOKEN": twilio.auth_token, "TWILIO_WHATSAPP_FROM": WHATSAPP_FROM,
           "TWILIO_API_BASE_URL": twilio.url, "TWILIO_SENDER_MPS": f"whatsapp={mps}",
           "OUTBOX_POLL_S": "0.2", "LLM_API_KEY": "bench", "LOG_LEVEL": "ERROR",
           "SECRET_KEY": uuid.uuid4().hex * 2, "AUTO_MIGRATE": "0"}
    if redis_prefix is not None:
        env |= {"REDIS_URL": REDIS_URL, "REDIS_KEY_PREFIX": redis_prefix}
    return env


async def _senders(env: dict[str, str], processes: int, messages: int) -> list[dict[str, Any]]:
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.sends", "--child", str(i), "--processes", str(processes),
        "--messages", str(messages), env=env, cwd=str(ROOT),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE) for i in range(processes)]
    reports = []
    for proc in procs:
        out, err = await proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"a sending process failed ({proc.returncode}): {err.decode()[-3000:]}")
        reports.append(json.loads(out.decode().strip().splitlines()[-1]))
    return reports


def _figures(twilio: FakeTwilio, reports: list[dict[str, Any]]) -> dict[str, float]:
    taken = [at for sender, at in twilio.taken if sender == WHATSAPP_FROM]
    bodies = [m.get("Body", "") for m in twilio.sent]
    seen: dict[str, int] = {}
    disorder = 0
    for body in bodies:
        found = BODY.match(body)
        if found is None:
            continue
        number, who = int(found.group(1)), found.group(3)
        disorder += number < seen.get(who, 0)
        seen[who] = max(seen.get(who, 0), number)
    outcomes: Counter[str] = Counter()
    for report in reports:
        outcomes.update(report["outcomes"])
    span = max(taken) - min(taken) if len(taken) > 1 else 0.0
    return {"sent": len(bodies), "rate": (len(taken) - 1) / span if span else 0.0,
            "peak": max(Counter(int(at) for at in taken).values(), default=0),
            "refused": twilio.rate_refused, "duplicates": len(bodies) - len(set(bodies)),
            "disorder": disorder, "expired": outcomes.get("expired", 0),
            "oldest": max(taken, default=0.0) - min(r["queued_at"] for r in reports)}


async def measure(backend: str, mps: int, args: argparse.Namespace) -> dict[str, Any]:
    from bot.storage.migrate import upgrade

    twilio = FakeTwilio()
    twilio.sender_mps = {WHATSAPP_FROM: args.twilio_mps}
    twilio.send_callbacks = False  # no bot server to call back; the bench counts at the stand-in
    await twilio.start()
    processes = 1 if backend == "sqlite" else args.processes
    prefix = f"bench:sends:{uuid.uuid4().hex[:12]}:" if backend == "postgres" else None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if backend == "sqlite":
                url = f"sqlite+aiosqlite:///{tmp}/bench.db"
            else:
                url = await create_postgres_database(args.postgres_admin_url, "deblo_bench_sends",
                                                     durable=False)
            try:
                await upgrade(url)
                await make_users(url, args.learners)
                reports = await _senders(_env(url, tmp, twilio, mps, prefix), processes, args.messages)
            finally:
                if backend == "postgres":
                    await drop_postgres_database(args.postgres_admin_url, url)
                    await clear_redis(prefix or "", REDIS_URL)
        return {"backend": backend, "processes": processes, "mps": mps, **_figures(twilio, reports)}
    finally:
        await twilio.stop()


def _table(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"\n{args.messages} messages to {args.learners} learners, one WhatsApp sender; the stand-in takes "
          f"{args.twilio_mps} a second and refuses the rest (20429)\n")
    print(f"{'backend':<9}{'procs':>6}{'pace/s':>8}{'sent':>7}{'rate/s':>8}{'max in 1 s':>11}{'20429':>7}"
          f"{'dupl.':>6}{'order':>6}{'expired':>8}{'oldest s':>9}")
    for r in rows:
        pace = "off" if r["mps"] >= 10_000 else str(r["mps"])
        print(f"{r['backend']:<9}{r['processes']:>6}{pace:>8}{r['sent']:>7}{r['rate']:>8.1f}{r['peak']:>11}"
              f"{r['refused']:>7}{r['duplicates']:>6}{r['disorder']:>6}{r['expired']:>8}{r['oldest']:>9.1f}")
    print("\naim: rate close to the pace, never more in one second than Twilio takes, 0 refused, "
          "0 duplicates, 0 out of order")


async def main_async(args: argparse.Namespace) -> None:
    rows = []
    for backend in ("sqlite", "postgres"):
        if args.only not in (None, backend):
            continue
        for mps in [args.mps] + ([100_000] if args.unpaced else []):
            print(f"{backend}, pace {mps}…", file=sys.stderr)
            rows.append(await measure(backend, mps, args))
    _table(rows, args)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.sends", description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--learners", type=int, default=2_000)
    parser.add_argument("--mps", type=int, default=80, help="TWILIO_SENDER_MPS for the WhatsApp sender")
    parser.add_argument("--twilio-mps", type=int, default=80, help="what the stand-in takes a second")
    parser.add_argument("--processes", type=int, default=2, help="sending processes on PostgreSQL")
    parser.add_argument("--only", choices=("sqlite", "postgres"))
    parser.add_argument("--unpaced", action="store_true", help="a row without pacing too")
    parser.add_argument("--postgres-admin-url", default=POSTGRES_ADMIN_URL)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        asyncio.run(child(args.child, args.processes, args.messages))
    else:
        asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
