"""`python -m bench.scale --background`: chat first, and a worker's start.

    .venv/bin/python -m bench.scale --background [--rate 8] [--seconds 20] [--workers 1] [--tasks 500]

One deployment (PostgreSQL, Redis, one `serve`, the first count of --workers `worker`s, each
WORKER_CONCURRENCY=32 unless --worker-concurrency says otherwise, the model and Twilio stood in as
for the scale-out rows). Measured, in this order:
- each worker's time to ready: from its spawn to its « worker started » line (the document
  libraries and the tools imported, the language, safety and e5 models loaded), and its resident
  memory then (VmRSS) and at the end (VmHWM, the peak), its child processes' included (the
  background lane's process and its copy of the model);
- ten users' first messages, one after another, right after the start: the first one's
  time-to-reply beside the tenth's (a model loaded at the first message shows there);
- chat alone: --rate messages a second for --seconds from --users pupils (children: the safety
  check reads each with the local model), p50 / p95 time-to-reply;
- chat with a background batch: --tasks library files (a 250-word text each) stored for the
  worker's index pass (LIBRARY_INDEX_INTERVAL_S=1) to cut, index and embed with the local model;
  once the pass has begun, the same load from other pupils; p50 / p95 again, and how far the batch
  went meanwhile.
Aim: chat p95 with the batch within 10 % of chat alone.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from pathlib import Path
from typing import Any

from bench.scale import run
from tests.fakes.llm import FakeLLM
from tests.fakes.twilio import FakeTwilio
from tests.support.harness import clear_redis, create_postgres_database, drop_postgres_database

FIRSTS = 10  # users whose first message after the start is timed, one after another
FIRST_TAG, ALONE_TAG, BUSY_TAG = 80_000, 0, 40_000
WORDS = ("fraction numérateur dénominateur addition multiplication division géométrie triangle "
         "photosynthèse cellule énergie plante lumière eau carbone histoire royaume fleuve "
         "grammaire verbe sujet complément accord phrase paragraphe").split()


def family(pid: int) -> list[int]:
    """The process and its descendants (the background lane's process, the sandbox's children)."""
    found = [pid]
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                found += family(int(child))
    except OSError:
        pass  # ended meanwhile
    return found


def memory_mb(pid: int) -> tuple[float, float]:
    """Resident memory now and at the peak (VmRSS, VmHWM) in MB, of the process and its children."""
    found = {"VmRSS": 0.0, "VmHWM": 0.0}
    for each in family(pid):
        try:
            with open(f"/proc/{each}/status") as f:
                for line in f:
                    name, _, value = line.partition(":")
                    if name in found:
                        found[name] += int(value.split()[0]) / 1024
        except OSError:
            continue
    return found["VmRSS"], found["VmHWM"]


def text_of(n: int) -> str:
    """A 250-word text of its own (every file a chunk to embed)."""
    words = [WORDS[(n * 7 + i * (n % 5 + 1)) % len(WORDS)] for i in range(240)]
    return f"Leçon {n} : " + " ".join(words) + f". Fin de la leçon numéro {n}."


async def add_files(database_url: str, owners: int, count: int) -> None:
    """`count` stored text files of the first `owners` users, none indexed yet."""
    from sqlalchemy import select
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

    from bot.storage.models import User, UserFile

    engine = create_async_engine(database_url)
    try:
        async with async_sessionmaker(engine, expire_on_commit=False)() as db:
            ids = list(await db.scalars(select(User.id).order_by(User.id).limit(owners)))
            for n in range(count):
                text = text_of(n)
                db.add(UserFile(user_id=ids[n % len(ids)], name=f"lecon-{n}.txt", mime="text/plain",
                                size=len(text.encode()), origin="upload", storage_key=f"bench/{n}",
                                text=text))
            await db.commit()
    finally:
        await engine.dispose()


async def progress(database_url: str) -> tuple[int, int]:
    """Files indexed so far (they have chunks) and chunks embedded."""
    from sqlalchemy import func, select
    from sqlalchemy.ext.asyncio import create_async_engine

    from bot.storage.models import LibraryChunk

    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as db:
            files = await db.scalar(select(func.count(func.distinct(LibraryChunk.file_id))))
            embedded = await db.scalar(select(func.count()).where(LibraryChunk.embedding.is_not(None)))
    finally:
        await engine.dispose()
    return int(files or 0), int(embedded or 0)


async def firsts(deployment: run.Deployment, twilio: FakeTwilio, first_user: int) -> list[float]:
    """Ten users' first messages, each sent once the one before is answered: each time-to-reply."""
    waits = []
    for k in range(FIRSTS):
        forms = run.load(FIRST_TAG + k, 1, range(first_user + k, first_user + k + 1), twilio.account_sid)
        posted = await run.offer_load(deployment.url, twilio.auth_token, 100.0, forms)
        await run.until_replied(twilio, set(posted), 120.0)
        [(tag, at)] = posted.items()
        waits.append(run.replies(twilio)[tag] - at)
    return waits


async def chat(deployment: run.Deployment, twilio: FakeTwilio, args: argparse.Namespace, first: int,
               senders: range) -> dict[str, float]:
    """The load of --rate messages a second for --seconds: p50 and p95 time-to-reply."""
    total = int(args.rate * args.seconds)
    posted = await run.offer_load(deployment.url, twilio.auth_token, args.rate,
                                  run.load(first, total, senders, twilio.account_sid))
    await run.until_replied(twilio, set(posted), args.seconds + args.drain)
    got = run.replies(twilio)
    waits = [got[tag] - at for tag, at in posted.items()]
    return {"p50": run.percentile(waits, 0.5), "p95": run.percentile(waits, 0.95), "replies": len(waits)}


async def until_started(database_url: str, timeout_s: float) -> None:
    """Until the index pass has cut its first file."""
    deadline = time.monotonic() + timeout_s
    while (await progress(database_url))[0] == 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the index pass did not start within {timeout_s:.0f} s")
        await asyncio.sleep(0.2)


async def measure(args: argparse.Namespace, llm: FakeLLM, twilio: FakeTwilio) -> dict[str, Any]:
    database_url = await create_postgres_database(args.database_admin_url, "deblo_bench")
    prefix = f"bench:{uuid.uuid4().hex[:12]}:"
    users, workers = args.users, args.workers[0]
    warm_users = min(int(args.rate * args.warmup), users)
    await run.make_users(database_url, 2 * users + warm_users + FIRSTS)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        port = run.free_port()
        env = run.deployment_env(tmp, database_url, prefix, port, args, llm, twilio)
        env["LIBRARY_INDEX_INTERVAL_S"] = str(args.index_interval)
        if args.bot_root:  # the processes run another checkout's code (a baseline)
            env["PYTHONPATH"] = args.bot_root
        deployment = run.Deployment(env, f"http://127.0.0.1:{port}", Path(tmp))
        out: dict[str, Any] = {"workers": workers}
        try:
            await deployment.start(workers)
            out["ready_s"] = deployment.ready_s
            out["rss_ready"] = [memory_mb(p.pid)[0] for p in deployment.procs[1:]]
            out["firsts"] = await firsts(deployment, twilio, 2 * users + warm_users)
            if warm_users:
                senders = range(2 * users, 2 * users + warm_users)
                forms = run.load(run.WARMUP_FIRST, warm_users, senders, twilio.account_sid)
                warmed = await run.offer_load(deployment.url, twilio.auth_token, args.rate, forms)
                await run.until_replied(twilio, set(warmed), args.warmup + args.drain)
            out["alone"] = await chat(deployment, twilio, args, ALONE_TAG, range(users))
            await add_files(database_url, users, args.tasks)
            await until_started(database_url, 120.0)
            out["before"] = await progress(database_url)
            out["busy"] = await chat(deployment, twilio, args, BUSY_TAG, range(users, 2 * users))
            out["after"] = await progress(database_url)
            out["rss_peak"] = [memory_mb(p.pid)[1] for p in deployment.procs[1:]]
            out["twice"] = run.doubled(twilio)
        finally:
            deployment.stop()
            await clear_redis(prefix, args.redis_url)
            await drop_postgres_database(args.database_admin_url, database_url)
    return out


def show(args: argparse.Namespace, r: dict[str, Any], load_before: float) -> None:
    print(f"\nChat first (PostgreSQL + Redis, one serve and {r['workers']} worker(s), {os.cpu_count()} CPUs; "
          f"{args.rate:g} messages/s for {args.seconds:g} s; a batch of {args.tasks} library files to "
          f"index and embed; 1-minute load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
          + (f"; bot code from {args.bot_root}" if args.bot_root else "") + ")\n")
    alone, busy = r["alone"], r["busy"]
    print(f"{'chat':<22}{'replies':>9}{'p50 s':>8}{'p95 s':>8}")
    print(f"{'alone':<22}{alone['replies']:>9.0f}{alone['p50']:>8.2f}{alone['p95']:>8.2f}")
    print(f"{'with the batch':<22}{busy['replies']:>9.0f}{busy['p50']:>8.2f}{busy['p95']:>8.2f}")
    print(f"p95 with the batch / alone: {busy['p95'] / alone['p95']:.2f} (aim <= 1.10); answers sent twice: "
          f"{r['twice']}")
    (f0, e0), (f1, e1) = r["before"], r["after"]
    print(f"the batch meanwhile: files indexed {f0} -> {f1} of {args.tasks}, chunks embedded {e0} -> {e1}\n")
    for n, (ready, rss, peak) in enumerate(zip(r["ready_s"], r["rss_ready"], r["rss_peak"], strict=True)):
        print(f"worker {n}: ready {ready:.1f} s after its spawn; resident {rss:.0f} MB at ready, "
              f"peak {peak:.0f} MB")
    waits = r["firsts"]
    print(f"first message after the start {waits[0]:.2f} s, tenth {waits[-1]:.2f} s "
          f"(ten users' first messages one after another: {' '.join(f'{w:.2f}' for w in waits)})")


async def main_async(args: argparse.Namespace) -> None:
    load_before = os.getloadavg()[0]
    llm, twilio = FakeLLM(), FakeTwilio()
    llm.responder = run.model(args.llm_latency)
    await llm.start()
    await twilio.start()
    try:
        result = await measure(args, llm, twilio)
    finally:
        await twilio.stop()
        await llm.stop()
    show(args, result, load_before)
