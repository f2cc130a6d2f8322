"""What scripts/image-test runs once the image is built: the README's production path tried with the
image, against this host's PostgreSQL and Redis (`--network host`) and the Twilio and model stand-ins
(tests/fakes), in the README's order: migrate, serve, two workers, a signed webhook answered once,
/readyz, the user inside, the sandbox's state, and a stop within SHUTDOWN_GRACE_S. Prints a table.

    python scripts/image_check.py ENGINE IMAGE BUILD_SECONDS
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import asyncpg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.llm import FakeLLM  # noqa: E402
from tests.fakes.twilio import FakeTwilio  # noqa: E402
from tests.support.harness import sign  # noqa: E402
from tests.support.ports import free_port  # noqa: E402

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
DATABASE = "deblo_image_test"
STUDENT = "+2250700000077"
GRACE_S = 10


def engine_run(engine: str, *args: str, check: bool = True, timeout: float = 300) -> str:
    done = subprocess.run([engine, *args], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise SystemExit(f"{engine} {' '.join(args[:3])}… failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout.strip()


async def fresh_database() -> None:
    conn = await asyncpg.connect(PG_ADMIN, timeout=5)
    try:
        await conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        await conn.execute(f"CREATE DATABASE {DATABASE}")
    finally:
        await conn.close()


def settings_file(twilio: FakeTwilio, llm: FakeLLM, port: int) -> Path:
    env = {
        "DATABASE_URL": f"postgresql+asyncpg://postgres@127.0.0.1:5432/{DATABASE}",
        "REDIS_URL": "redis://127.0.0.1:6379/13", "REDIS_KEY_PREFIX": f"imagetest{os.getpid()}:",
        "PORT": str(port), "HOST": "127.0.0.1", "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
        "TWILIO_ACCOUNT_SID": twilio.account_sid, "TWILIO_AUTH_TOKEN": twilio.auth_token,
        "TWILIO_API_BASE_URL": twilio.url, "TWILIO_SMS_FROM": "+15005550006",
        "TWILIO_WHATSAPP_FROM": "whatsapp:+14155238886",
        "LLM_BASE_URL": llm.url, "LLM_API_KEY": "image-test", "SECRET_KEY": os.urandom(32).hex(),
        "ORG_NAME": "Lycée Sainte-Marie",
        "SHUTDOWN_GRACE_S": str(GRACE_S), "LOG_LEVEL": "INFO",
    }
    path = Path(tempfile.mkstemp(prefix="deblo-image-", suffix=".env")[1])
    path.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    return path


async def wait_ready(port: int, deadline_s: float = 90) -> float:
    started = time.monotonic()
    async with aiohttp.ClientSession() as http:
        while time.monotonic() - started < deadline_s:
            try:
                async with http.get(f"http://127.0.0.1:{port}/readyz") as resp:
                    if resp.status == 200:
                        return time.monotonic() - started
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.5)
    raise SystemExit(f"/readyz did not answer 200 within {deadline_s:g} s")


async def post_webhook(port: int, token: str, account: str, sid: str) -> int:
    url = f"http://127.0.0.1:{port}/twilio/inbound"
    params = [("MessageSid", sid), ("SmsMessageSid", sid), ("SmsSid", sid), ("AccountSid", account),
              ("From", f"whatsapp:{STUDENT}"), ("To", "whatsapp:+14155238886"), ("Body", "Bonjour"),
              ("NumMedia", "0"), ("WaId", STUDENT[1:]), ("ApiVersion", "2010-04-01")]
    headers = {"X-Twilio-Signature": sign(token, url, params),
               "Content-Type": "application/x-www-form-urlencoded"}
    async with aiohttp.ClientSession() as http:
        async with http.post(url, data=urlencode(params), headers=headers) as resp:
            return resp.status


async def replies(twilio: FakeTwilio, wait_s: float) -> list[dict[str, object]]:
    for _ in range(int(wait_s / 0.2)):  # polled: the stand-in records sends, it signals nothing
        if twilio.to(STUDENT):
            break
        await asyncio.sleep(0.2)
    await asyncio.sleep(2)  # a second reply, if there were one, would have gone by now
    return twilio.to(STUDENT)


def logs(engine: str, name: str) -> str:
    done = subprocess.run([engine, "logs", name], capture_output=True, text=True, timeout=30)
    return done.stdout + done.stderr


def sandbox_state(serve_logs: str) -> str:
    """What `serve` said of bash_execute at start-up (offered, or why not)."""
    for line in serve_logs.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("logger") == "bot.sandbox.bwrap" and "bash_execute" in str(record.get("msg")):
            return str(record["msg"])[:100]
    return "not reported"


def stop_seconds(engine: str, name: str) -> tuple[float, str]:
    started = time.monotonic()
    engine_run(engine, "stop", "-t", str(GRACE_S + 20), name, timeout=GRACE_S + 60)
    took = time.monotonic() - started
    code = engine_run(engine, "inspect", "--format", "{{.State.ExitCode}}", name)
    return took, code


async def main(engine: str, image: str, build_s: str) -> int:
    twilio, llm = FakeTwilio(), FakeLLM()
    await twilio.start()
    await llm.start()
    port, tag = free_port(), f"deblo-image-test-{os.getpid()}"
    env_file = settings_file(twilio, llm, port)
    run = ["run", "--network", "host", "--env-file", str(env_file)]
    names = [f"{tag}-serve", f"{tag}-worker-1", f"{tag}-worker-2"]
    rows: list[tuple[str, str]] = [("build", f"{build_s} s")]
    try:
        await fresh_database()
        started = time.monotonic()
        engine_run(engine, *run, "--rm", image, "db", "upgrade", timeout=120)
        rows.append(("db upgrade", f"{time.monotonic() - started:.1f} s"))
        engine_run(engine, *run, "-d", "--name", names[0], image, "serve")
        for name in names[1:]:  # scaled to two workers, as `--scale worker=2` does
            engine_run(engine, *run, "-d", "--name", name, "--health-cmd", "none", image, "worker")
        rows.append(("serve ready (/readyz 200)", f"{await wait_ready(port):.1f} s"))
        sid = "SM" + os.urandom(16).hex()
        statuses = [await post_webhook(port, twilio.auth_token, twilio.account_sid, sid) for _ in range(2)]
        sent = await replies(twilio, 60)
        if statuses != [200, 200] or len(sent) != 1:
            tails = "\n".join(f"--- {n}\n{logs(engine, n)[-3000:]}" for n in names)
            raise SystemExit(f"webhook answered {statuses}, {len(sent)} replies (expected 200, 200 and one)\n"
                             f"{tails}")
        rows.append(("signed webhook, posted twice", "answered once"))
        uid = engine_run(engine, "exec", names[0], "id", "-u")
        if uid == "0":
            raise SystemExit("the bot runs as root in the container")
        rows.append(("user in the container", f"uid {uid}"))
        rows.append(("bash_execute", sandbox_state(logs(engine, names[0]))))
        for name in names:
            took, code = stop_seconds(engine, name)
            if took > GRACE_S + 5 or code not in ("0", "143"):
                raise SystemExit(f"{name} stopped in {took:.1f} s with exit code {code} "
                                 f"(SHUTDOWN_GRACE_S={GRACE_S})")
            rows.append((f"stop {name.removeprefix(tag + '-')}", f"{took:.1f} s, exit {code}"))
        size = int(engine_run(engine, "image", "inspect", "--format", "{{.Size}}", image))
        rows.append(("image size", f"{size / 1e6:.0f} MB"))
    finally:
        for name in names:
            engine_run(engine, "rm", "-f", name, check=False)
        env_file.unlink(missing_ok=True)
        await twilio.stop()
        await llm.stop()
    width = max(len(k) for k, _ in rows)
    print("\n".join(f"{k:<{width}}  {v}" for k, v in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(*sys.argv[1:4])))
