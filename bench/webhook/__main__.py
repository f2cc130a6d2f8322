"""Inbound webhook benchmark: `python -m bench.webhook`.

Measures signed Twilio webhooks answered by the real app (signature check, user lookup, durable
insert, enqueue) next to a bare aiohttp handler, in the same run on this machine, on SQLite and on
PostgreSQL. Both servers run at once, each in its own process on loopback; this process sends
pre-signed requests, alternating the two servers phase by phase over `--rounds` rounds so that
what else the machine does falls on both alike:

1. throughput: as many requests as `--concurrency` connections can push, for `--requests` requests;
2. latency at a fixed rate (`--rate`, default 300/s) for `--seconds`: p50 / p99 time to the 200;
3. (the bot only) /healthz latency, quiet and while `--flood` clients (another process) keep posting
   unsigned 2 MB forms, each refused with a 413 at its Content-Length (WEBHOOK_MAX_BYTES); the
   refusals are read from the bot's own counter (deblo_inbound_total{result="too_large"}).

The figures are the medians over the rounds; the ratio is the median of each round's ratio.
Targets, on each database: throughput >= 0.5 of the bare handler's and p99 <= 3 ms at 300 requests/s.
Printed too, for the bot: its database transactions and statements per webhook in each phase (read
from its /metrics: many webhooks share a batch). A webhook is answered once its row is committed, so
on PostgreSQL its time holds a commit's wait for the disk: the run also times PostgreSQL's own
one-row commits, alone, before the servers start (`--pg-async-commit` measures with commits that
do not wait for the disk, as the tests' databases).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import aiohttp

from bench.compare import Figure, add_arguments, compare, report

AUTH_TOKEN = "bench-auth-token"
ACCOUNT_SID = "AC" + "b" * 32


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- servers (run in child processes) -----------------------------------------------------------


async def serve_bare(port: int) -> None:
    from aiohttp import web

    async def handler(request: web.Request) -> web.Response:
        await request.post()
        return web.Response(text='<?xml version="1.0" encoding="UTF-8"?><Response/>', content_type="text/xml")

    app = web.Application()
    app.router.add_post("/twilio/inbound", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port, backlog=1024).start()
    await asyncio.Event().wait()


METRICS_TOKEN = "bench-metrics"


async def serve_bot(port: int, data_dir: str, database_url: str) -> None:
    from aiohttp import web

    from bot.channel.web import create_app
    from bot.cli import tune_gc
    from bot.config import load_settings
    from bot.services import build_services
    from bot.storage.migrate import upgrade

    settings = load_settings({
        "DATA_DIR": data_dir, "DATABASE_URL": database_url, "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
        "TWILIO_ACCOUNT_SID": ACCOUNT_SID, "TWILIO_AUTH_TOKEN": AUTH_TOKEN, "LOG_LEVEL": "ERROR",
        "METRICS_TOKEN": METRICS_TOKEN,  # the refusals are read from /metrics on the same port
    })
    await upgrade(settings.database_url)
    services = await build_services(settings)
    tune_gc()  # as `python -m bot serve` does once started
    runner = web.AppRunner(create_app(services), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port, backlog=1024).start()
    await asyncio.Event().wait()


# --- load -----------------------------------------------------------------------------------------


def signed_requests(base_url: str, n: int, users: int, tag: str) -> list[tuple[bytes, str]]:
    from twilio.request_validator import RequestValidator

    validator = RequestValidator(AUTH_TOKEN)
    url = base_url + "/twilio/inbound"
    out = []
    for i in range(n):
        sid = f"SM{tag}{i:030d}"[:34]
        params = {
            "SmsMessageSid": sid, "NumMedia": "0", "SmsSid": sid, "SmsStatus": "received",
            "Body": f"Bonjour, question numéro {i} sur les fractions", "To": "whatsapp:+14155238886",
            "NumSegments": "1", "MessageSid": sid, "AccountSid": ACCOUNT_SID,
            "From": f"whatsapp:+22507{i % users:08d}", "ApiVersion": "2010-04-01", "ProfileName": "Awa",
        }
        out.append((urlencode(params).encode(), validator.compute_signature(url, params)))
    return out


async def post(session: aiohttp.ClientSession, url: str, body: bytes, signature: str) -> float:
    started = time.perf_counter()
    async with session.post(url, data=body, headers={
        "Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": signature,
    }) as resp:
        await resp.read()
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}")
    return time.perf_counter() - started


async def throughput(url: str, requests: list[tuple[bytes, str]], concurrency: int) -> float:
    queue = list(reversed(requests))
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def client() -> None:
            while queue:
                body, sig = queue.pop()
                await post(session, url, body, sig)

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        return len(requests) / (time.perf_counter() - started)


async def fixed_rate(url: str, requests: list[tuple[bytes, str]], rate: float) -> list[float]:
    """Open loop: request i leaves at i/rate whatever the previous ones are doing."""
    connector = aiohttp.TCPConnector(limit=0)
    latencies: list[float] = []
    async with aiohttp.ClientSession(connector=connector) as session:
        loop = asyncio.get_running_loop()
        start = loop.time() + 0.05

        async def one(i: int, body: bytes, sig: str) -> None:
            await asyncio.sleep(max(0.0, start + i / rate - loop.time()))
            latencies.append(await post(session, url, body, sig))

        await asyncio.gather(*(one(i, b, s) for i, (b, s) in enumerate(requests)))
    return latencies


async def flood_forever(port: int, clients: int) -> None:
    """`clients` connections posting unsigned 2 MB forms, each expected to be refused with a 413."""
    oversized = b"Body=" + b"z" * (2 * 1024 * 1024)
    url = f"http://127.0.0.1:{port}/twilio/inbound"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def flooder() -> None:
            while True:
                async with session.post(url, data=oversized, headers={
                        "Content-Type": "application/x-www-form-urlencoded"}) as resp:
                    await resp.read()
                    if resp.status != 413:
                        raise RuntimeError(f"oversized form got HTTP {resp.status}")

        await asyncio.gather(*(flooder() for _ in range(clients)))


async def refused_so_far(session: aiohttp.ClientSession, base: str) -> float:
    async with session.get(base + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}) as resp:
        text = await resp.text()
    prefix = 'deblo_inbound_total{channel="unknown",result="too_large"} '
    return sum(float(line.removeprefix(prefix)) for line in text.splitlines() if line.startswith(prefix))


async def healthz_latency(base: str, port: int, probes: int, flood: int) -> tuple[list[float], float]:
    """/healthz times (s) while `flood` clients of another process post oversized forms (0: quiet),
    and how many the bot refused meanwhile (its too_large counter)."""
    flooder = start_server([sys.executable, "-m", "bench.webhook", "--serve", "flood", "--port", str(port),
                            "--flood", str(flood)]) if flood else None
    try:
        async with aiohttp.ClientSession() as session:
            before = await refused_so_far(session, base)
            await asyncio.sleep(1.0 if flood else 0)  # the flood under way
            times = []
            for _ in range(probes):
                started = time.perf_counter()
                async with session.get(base + "/healthz") as resp:
                    await resp.read()
                    if resp.status != 200:
                        raise RuntimeError(f"/healthz got HTTP {resp.status}")
                times.append(time.perf_counter() - started)
                await asyncio.sleep(0.005)
            if flooder is not None and flooder.poll() is not None:
                raise RuntimeError("the flooding process stopped (an oversized form was not refused?)")
            return times, await refused_so_far(session, base) - before
    finally:
        if flooder is not None:
            flooder.terminate()
            flooder.wait(timeout=10)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def wait_up(url: str) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(1200):  # a minute: a loaded machine takes long to import the bot
            try:
                async with session.post(url, data=b"") as resp:
                    await resp.read()
                    return
            except aiohttp.ClientError:
                await asyncio.sleep(0.05)
    raise RuntimeError(f"server at {url} did not start")


ROOT = str(Path(__file__).resolve().parents[2])


def start_server(cmd: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": ROOT})


class Server:
    """One server process on its own port, and the requests signed for it, used round after round."""

    def __init__(self, name: str, mode: str, tmp: str, database_url: str) -> None:
        self.name, self.port = name, free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = self.base + "/twilio/inbound"
        self.proc = start_server([sys.executable, "-m", "bench.webhook", "--serve", mode, "--port",
                                  str(self.port), "--data-dir", tmp, "--database-url", database_url])
        self.batches = 0

    def requests(self, n: int, users: int) -> list[tuple[bytes, str]]:
        # A new tag for each batch: every request is a new message, never a retried one.
        self.batches += 1
        return signed_requests(self.base, n, users, f"{self.name[:2]}{self.batches:03d}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


async def db_counts(server: Server) -> tuple[float, float] | None:
    """The bot's database transactions and statements so far, from its /metrics (None: the bare
    handler, which has none). A scrape's own reads (the queue's gauges) count in the next one."""
    if server.name == "bare aiohttp":
        return None
    async with aiohttp.ClientSession() as session, session.get(
            server.base + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}) as resp:
        lines = (await resp.text()).splitlines()
    value = {line.split(" ")[0]: float(line.split(" ")[1]) for line in lines if line.startswith("deblo_db_")}
    return value["deblo_db_transactions_total"], value["deblo_db_statements_total"]


async def one_round(servers: list[Server], args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Throughput then fixed-rate latency, each phase run on every server in turn; for the bot, the
    database transactions and statements per webhook in each phase."""
    out: dict[str, dict[str, float]] = {s.name: {} for s in servers}
    for server in servers:
        before = await db_counts(server)
        out[server.name]["rps"] = await throughput(
            server.url, server.requests(args.requests, args.users), args.concurrency)
        if before and (after := await db_counts(server)):
            out[server.name].update(tp_tx=(after[0] - before[0]) / args.requests,
                                    tp_statements=(after[1] - before[1]) / args.requests)
    n = int(args.rate * args.seconds)
    for server in servers:
        before = await db_counts(server)
        lat = await fixed_rate(server.url, server.requests(n, args.users), args.rate)
        out[server.name].update({"p50": percentile(lat, 0.5) * 1000, "p99": percentile(lat, 0.99) * 1000,
                                 "mean": statistics.fmean(lat) * 1000})
        if before and (after := await db_counts(server)):
            out[server.name].update(rate_tx=(after[0] - before[0]) / n,
                                    rate_statements=(after[1] - before[1]) / n)
    return out


async def health_figures(server: Server, args: argparse.Namespace) -> dict[str, float]:
    result: dict[str, float] = {}
    for phase, flood in (("quiet", 0), ("flood", args.flood)):
        times, refused = await healthz_latency(server.base, server.port, args.probes, flood)
        result[f"health_{phase}_p50"] = percentile(times, 0.5) * 1000
        result[f"health_{phase}_p99"] = percentile(times, 0.99) * 1000
        result[f"health_{phase}_refused"] = refused
    return result


async def measure(database_url: str, tmp: str, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """The bare handler and the bot side by side on one database: medians over the rounds, and
    the median of the per-round throughput ratios."""
    servers = [Server("bare aiohttp", "bare", tmp, database_url),
               Server("deblo webhook", "bot", tmp, database_url)]
    try:
        for server in servers:
            await wait_up(server.url)
            await throughput(server.url, server.requests(200, args.users), 8)  # warm-up
        rounds = [await one_round(servers, args) for _ in range(args.rounds)]
        results = {s.name: {k: statistics.median(r[s.name][k] for r in rounds) for k in rounds[0][s.name]}
                   for s in servers}
        bot = results["deblo webhook"]
        bot["ratio"] = statistics.median(r["deblo webhook"]["rps"] / r["bare aiohttp"]["rps"] for r in rounds)
        if args.probes:
            bot.update(await health_figures(servers[1], args))
        return results
    finally:
        for server in servers:
            server.stop()


PER_DATABASE = {
    "rps": Figure("deblo req/s", True, 0), "of_bare": Figure("of bare", True),
    "p50": Figure("p50 ms", False), "p99": Figure("p99 ms", False), "mean": Figure("mean ms", False),
    "bare_rps": Figure("bare req/s", True, 0),
    "health_quiet_p99": Figure("healthz p99 ms", False), "health_flood_p99": Figure("flood p99 ms", False),
    "commit_p99": Figure("commit alone p99 ms", False),  # PostgreSQL's own, without the bot
    "rate_statements": Figure("statements per webhook", False, 3),  # at --rate
}
# SQLite's figures unprefixed, PostgreSQL's with "pg_" (its rows only when it answers).
FIGURES = {**PER_DATABASE, **{f"pg_{k}": Figure(f"PG {f.label}", f.higher_is_better, f.digits)
                              for k, f in PER_DATABASE.items()}}


def figures(database: str, results: dict[str, dict[str, float]]) -> dict[str, float]:
    bare, bot = results["bare aiohttp"], results["deblo webhook"]
    found = {**{k: bot[k] for k in PER_DATABASE if k in bot}, "of_bare": bot["ratio"],
             "bare_rps": bare["rps"]}
    prefix = "pg_" if database == "PostgreSQL" else ""
    return {prefix + k: v for k, v in found.items()}


async def postgres_database(url: str, async_commit: bool = False) -> str:
    """A fresh database for the run (dropped and made again; with `async_commit`, its commits do
    not wait for the disk), or an empty string with the reason printed when PostgreSQL does not
    answer."""
    import asyncpg
    from sqlalchemy.engine import make_url

    target = make_url(url)
    admin = target.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    try:
        conn = await asyncpg.connect(admin, timeout=3)
    except (OSError, asyncpg.PostgresError) as exc:
        print(f"PostgreSQL not measured: {url} does not answer ({exc})")
        return ""
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{target.database}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{target.database}"')
        if async_commit:
            await conn.execute(f'ALTER DATABASE "{target.database}" SET synchronous_commit TO off')
    finally:
        await conn.close()
    return url


async def commit_times(url: str, commits: int = 200) -> list[float]:
    """PostgreSQL's own time (s) for a one-row insert committed alone, `commits` times in a row on
    one connection: what the disk adds to each batch the webhook commits."""
    import asyncpg
    from sqlalchemy.engine import make_url

    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE TABLE bench_commits (id serial PRIMARY KEY, at timestamp)")
        times = []
        for _ in range(commits):
            started = time.perf_counter()
            await conn.execute("INSERT INTO bench_commits (at) VALUES (now())")
            times.append(time.perf_counter() - started)
        await conn.execute("DROP TABLE bench_commits")
        return times
    finally:
        await conn.close()


def print_table(database: str, results: dict[str, dict[str, float]], args: argparse.Namespace) -> None:
    bot = results["deblo webhook"]
    print(f"\nInbound webhook benchmark ({database}, loopback, {os.cpu_count()} CPUs; median of "
          f"{args.rounds} rounds; latency at {args.rate:.0f} req/s for {args.seconds:.0f} s)\n")
    print(f"{'handler':<16}{'throughput req/s':>18}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}")
    for name, r in results.items():
        print(f"{name:<16}{r['rps']:>18.0f}{r['p50']:>10.2f}{r['p99']:>10.2f}{r['mean']:>10.2f}")
    print(f"\n{database}: throughput ratio deblo/bare {bot['ratio']:.2f} (target >= 0.5), "
          f"p99 at {args.rate:.0f} req/s {bot['p99']:.2f} ms (target <= 3 ms)")
    if "tp_tx" in bot:
        print(f"database transactions / statements per webhook: {bot['tp_tx']:.3f} / "
              f"{bot['tp_statements']:.3f} flat out, {bot['rate_tx']:.3f} / {bot['rate_statements']:.3f} "
              f"at {args.rate:.0f} req/s")
    if "commit_p50" in bot:
        waiting = "not waiting" if args.pg_async_commit else "waiting"
        print(f"PostgreSQL's own one-row commit, alone ({waiting} for the disk): "
              f"p50 {bot['commit_p50']:.2f} ms, p99 {bot['commit_p99']:.2f} ms")
    if "health_quiet_p50" not in bot:
        return
    print(f"\n/healthz while oversized unsigned forms are refused ({args.probes} probes per row)\n")
    print(f"{'phase':<34}{'p50 ms':>10}{'p99 ms':>10}{'413s':>8}")
    for phase, label in (("quiet", "quiet"), ("flood", f"{args.flood} clients posting 2 MB forms")):
        print(f"{label:<34}{bot[f'health_{phase}_p50']:>10.2f}{bot[f'health_{phase}_p99']:>10.2f}"
              f"{bot[f'health_{phase}_refused']:>8.0f}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.webhook", description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests in each throughput phase")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rate", type=float, default=300.0, help="requests per second in the latency phase")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds; the medians are shown")
    parser.add_argument("--users", type=int, default=200, help="distinct senders")
    parser.add_argument("--database-url", default="", help="default: a fresh SQLite file")
    parser.add_argument("--postgres", default="postgresql+asyncpg://postgres@127.0.0.1:5432/bench_webhook",
                        help="PostgreSQL measured as well (the database is dropped and made again)")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    parser.add_argument("--pg-async-commit", action="store_true",
                        help="PostgreSQL's commits do not wait for the disk (synchronous_commit off)")
    parser.add_argument("--flood", type=int, default=20, help="clients posting oversized forms")
    parser.add_argument("--probes", type=int, default=200, help="/healthz requests per phase (0: none)")
    add_arguments(parser)
    parser.add_argument("--serve", choices=("bare", "bot", "flood"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    return parser.parse_args()


async def main() -> None:
    args = parse_args()
    if args.serve == "bare":
        await serve_bare(args.port)
        return
    if args.serve == "bot":
        await serve_bot(args.port, args.data_dir, args.database_url)
        return
    if args.serve == "flood":
        await flood_forever(args.port, args.flood)
        return
    if compare(args, "bench.webhook", FIGURES):
        return
    with tempfile.TemporaryDirectory() as tmp:
        databases = {"SQLite": args.database_url or f"sqlite+aiosqlite:///{tmp}/bench.db"}
        if args.database_url:
            databases = {args.database_url.split(":")[0]: args.database_url}
        elif not args.no_postgres and (pg := await postgres_database(args.postgres, args.pg_async_commit)):
            databases["PostgreSQL"] = pg
        values: dict[str, float] = {}
        for database, url in databases.items():
            commits = await commit_times(url) if url.startswith("postgresql") else []
            results = await measure(url, tmp, args)
            if commits:
                results["deblo webhook"].update(commit_p50=percentile(commits, 0.5) * 1000,
                                                commit_p99=percentile(commits, 0.99) * 1000)
            values.update(figures(database, results))
            if not args.json:
                print_table(database, results, args)
    if args.json:
        report("bench.webhook", FIGURES, values)


if __name__ == "__main__":
    asyncio.run(main())
