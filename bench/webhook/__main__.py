"""Inbound webhook benchmark: `python -m bench.webhook`.

Measures signed Twilio webhooks answered by the real app (signature check, user lookup, durable
insert, enqueue) next to a bare aiohttp handler, in the same run on this machine. Each server runs
in its own process on loopback; this process sends pre-signed requests:

1. throughput: as many requests as `--concurrency` connections can push, for `--requests` requests;
2. latency at a fixed rate (`--rate`, default 300/s) for `--seconds`: p50 / p99 time to the 200;
3. (the bot only) /healthz latency, quiet and while `--flood` clients (another process) keep posting
   unsigned 2 MB forms, each refused with a 413 at its Content-Length (WEBHOOK_MAX_BYTES); the
   refusals are read from the bot's own counter (deblo_inbound_total{result="too_large"}).

Targets: p99 < 20 ms at 300 requests/s on SQLite, throughput >= 1/3 of the bare handler's.
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
    from bot.config import load_settings
    from bot.services import build_services
    from bot.storage.migrate import upgrade

    settings = load_settings({
        "DATA_DIR": data_dir, "DATABASE_URL": database_url, "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
        "TWILIO_ACCOUNT_SID": ACCOUNT_SID, "TWILIO_AUTH_TOKEN": AUTH_TOKEN, "LOG_LEVEL": "WARNING",
        "METRICS_TOKEN": METRICS_TOKEN,  # the refusals are read from /metrics on the same port
    })
    await upgrade(settings.database_url)
    services = await build_services(settings)
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
        for _ in range(200):
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


async def measure(name: str, cmd: list[str], port: int, args: argparse.Namespace) -> dict[str, float]:
    proc = start_server(cmd)
    base = f"http://127.0.0.1:{port}"
    url = base + "/twilio/inbound"
    try:
        await wait_up(url)
        warm = signed_requests(base, 200, args.users, f"{name[:2]}w")
        await throughput(url, warm, 8)
        rps = await throughput(url, signed_requests(base, args.requests, args.users, f"{name[:2]}t"),
                               args.concurrency)
        n = int(args.rate * args.seconds)
        lat = await fixed_rate(url, signed_requests(base, n, args.users, f"{name[:2]}r"), args.rate)
        result = {"rps": rps, "p50": percentile(lat, 0.5) * 1000, "p99": percentile(lat, 0.99) * 1000,
                  "mean": statistics.fmean(lat) * 1000, "n": n}
        if name == "deblo webhook":
            for phase, flood in (("quiet", 0), ("flood", args.flood)):
                times, refused = await healthz_latency(base, port, args.probes, flood)
                result[f"health_{phase}_p50"] = percentile(times, 0.5) * 1000
                result[f"health_{phase}_p99"] = percentile(times, 0.99) * 1000
                result[f"health_{phase}_refused"] = refused
        return result
    finally:
        proc.terminate()
        proc.wait(timeout=10)


FIGURES = {
    "rps": Figure("deblo req/s", True, 0), "of_bare": Figure("of bare", True),
    "p50": Figure("p50 ms", False), "p99": Figure("p99 ms", False), "mean": Figure("mean ms", False),
    "bare_rps": Figure("bare req/s", True, 0),
    "health_quiet_p99": Figure("healthz p99 ms", False), "health_flood_p99": Figure("flood p99 ms", False),
}


def figures(bare: dict[str, float], bot: dict[str, float]) -> dict[str, float]:
    return {**{k: bot[k] for k in FIGURES if k in bot}, "of_bare": bot["rps"] / bare["rps"],
            "bare_rps": bare["rps"]}


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.webhook", description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests in the throughput phase")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rate", type=float, default=300.0, help="requests per second in the latency phase")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--users", type=int, default=200, help="distinct senders")
    parser.add_argument("--database-url", default="", help="default: a fresh SQLite file")
    parser.add_argument("--flood", type=int, default=20, help="clients posting oversized forms")
    parser.add_argument("--probes", type=int, default=200, help="/healthz requests per phase")
    add_arguments(parser)
    parser.add_argument("--serve", choices=("bare", "bot", "flood"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
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
        database_url = args.database_url or f"sqlite+aiosqlite:///{tmp}/bench.db"
        results = {}
        for name in ("bare aiohttp", "deblo webhook"):
            port = free_port()
            mode = "bare" if name.startswith("bare") else "bot"
            cmd = [sys.executable, "-m", "bench.webhook", "--serve", mode, "--port", str(port),
                   "--data-dir", tmp, "--database-url", database_url]
            results[name] = await measure(name, cmd, port, args)
    bare, bot = results["bare aiohttp"], results["deblo webhook"]
    if args.json:
        report("bench.webhook", FIGURES, figures(bare, bot))
        return
    database = args.database_url.split(":")[0] if args.database_url else "SQLite"
    print(f"\nInbound webhook benchmark ({database}, loopback, {os.cpu_count()} CPUs; "
          f"latency at {args.rate:.0f} req/s for {args.seconds:.0f} s)\n")
    print(f"{'handler':<16}{'throughput req/s':>18}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}")
    for name, r in results.items():
        print(f"{name:<16}{r['rps']:>18.0f}{r['p50']:>10.2f}{r['p99']:>10.2f}{r['mean']:>10.2f}")
    ratio = bot["rps"] / bare["rps"]
    print(f"\nthroughput ratio deblo/bare: {ratio:.2f} (target >= 0.33)")
    print(f"p99 at {args.rate:.0f} req/s: {bot['p99']:.2f} ms (target < 20 ms)")
    print(f"\n/healthz while oversized unsigned forms are refused ({args.probes} probes per row)\n")
    print(f"{'phase':<34}{'p50 ms':>10}{'p99 ms':>10}{'413s':>8}")
    for phase, label in (("quiet", "quiet"), ("flood", f"{args.flood} clients posting 2 MB forms")):
        print(f"{label:<34}{bot[f'health_{phase}_p50']:>10.2f}{bot[f'health_{phase}_p99']:>10.2f}"
              f"{bot[f'health_{phase}_refused']:>8.0f}")


if __name__ == "__main__":
    asyncio.run(main())
