"""The dashboard's pages on a school's worth of data: 5,000 students in classes of 40, a year of
checked results (about two a week each), 12 skills' mastery each, items due, 30 days of messages,
turns and credits; each page's time (median and p95 over a few requests, after one warm-up) on
SQLite and on PostgreSQL, through the real app and HTTP. Aim: under 300 ms on PostgreSQL.

    python -m bench.dashboard [--students 5000] [--requests 9] [--only sqlite|postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import secrets
import socket
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from aiohttp import web  # noqa: E402
from sqlalchemy import insert  # noqa: E402

from bot.cli import registered_routes  # noqa: E402
from bot.config import load_settings  # noqa: E402
from bot.services import Services, build_services  # noqa: E402
from bot.storage.migrate import upgrade  # noqa: E402
from bot.storage.models import (  # noqa: E402
    Cohort,
    CohortMember,
    Conversation,
    ExerciseResult,
    InboundMessage,
    Operator,
    OperatorCohort,
    OperatorSession,
    OutboundMessage,
    QuizItem,
    SafetyFlag,
    SkillMastery,
    TurnRecord,
    User,
)
from bot.web.admin import SESSION_COOKIE  # noqa: E402
from bot.web.admin.auth import token_hash  # noqa: E402
from tests.support.harness import POSTGRES_ADMIN_URL, create_postgres_database, drop_postgres_database  # noqa: E402

CLASS_SIZE = 40
SKILLS = ["Fractions", "Décimaux", "Proportionnalité", "Équations", "Géométrie", "Périmètres", "Aires",
          "Conjugaison", "Accords", "Lecture", "Orthographe", "Vocabulaire"]
NOW = datetime.now(UTC).replace(microsecond=0)
BATCH = 5000


async def _insert(services: Services, model: Any, rows: list[dict[str, Any]]) -> None:
    async with services.sessions() as db, db.begin():
        for start in range(0, len(rows), BATCH):
            await db.execute(insert(model), rows[start:start + BATCH])


def _students(n: int, rng: random.Random) -> list[dict[str, Any]]:
    return [{"id": i, "phone": f"+22507{i:08d}", "display_name": f"Élève {i}", "mode": "child",
             "role": "student", "school_level": "CM2", "onboarding_step": None, "created_at": NOW,
             "last_inbound_at": NOW - timedelta(hours=rng.uniform(0, 24 * 45))} for i in range(1, n + 1)]


def _learning_rows(n: int, rng: random.Random) -> tuple[list[dict[str, Any]], ...]:
    mastery, results, items = [], [], []
    for user in range(1, n + 1):
        for skill in SKILLS:
            mastery.append({"user_id": user, "subject": "Mathématiques", "skill": skill.casefold(),
                            "label": skill, "p_known": rng.random(), "answers": 8, "correct": 5,
                            "updated_at": NOW - timedelta(days=rng.uniform(0, 60))})
        for _ in range(100):  # a year: about two checked answers a week
            skill = rng.choice(SKILLS)
            results.append({"user_id": user, "subject": "Mathématiques", "topic": skill,
                            "skill": skill.casefold(),
                            "correct": rng.random() < 0.65, "source": "quiz", "verified": True,
                            "created_at": NOW - timedelta(days=rng.uniform(0, 365))})
        for k in range(6):
            items.append({"user_id": user, "quiz_id": f"q{user}-{k}", "quiz_type": "mcq", "question": "?",
                          "options": ["a", "b"], "correct_index": 0, "subject": "Mathématiques",
                          "skill": rng.choice(SKILLS).casefold(),
                          "due_at": NOW + timedelta(days=rng.uniform(-9, 9))})
    return mastery, results, items


def _traffic(n: int, rng: random.Random) -> tuple[list[dict[str, Any]], ...]:
    inbound, outbound, turns = [], [], []
    for k in range(n * 9):  # 30 days: nine messages in a month per student, each answered once
        user, at = rng.randint(1, n), NOW - timedelta(hours=rng.uniform(0, 24 * 30))
        inbound.append({"message_sid": f"SM{k:030d}", "user_id": user, "channel": "whatsapp",
                        "from_addr": "x",
                        "status": "done", "created_at": at})
        failed = rng.random() < 0.02
        outbound.append({"user_id": user, "channel": "whatsapp", "to_addr": "x", "sid": f"SMo{k:029d}",
                         "status": "failed" if failed else "delivered",
                         "error_code": "63016" if failed else None,
                         "segments": 1, "created_at": at})
        turns.append({"conversation_id": user, "user_id": user, "exit_reason": "final", "prompt_tokens": 3000,
                      "completion_tokens": 400, "created_at": at})
    return inbound, outbound, turns


async def seed(services: Services, n: int) -> tuple[str, str, int]:
    """The school; returns the admin's and a teacher's session tokens and a student of class 1."""
    rng = random.Random(25)
    await _insert(services, User, _students(n, rng))
    await _insert(services, Conversation, [{"id": i, "user_id": i} for i in range(1, n + 1)])
    classes = (n + CLASS_SIZE - 1) // CLASS_SIZE
    await _insert(services, Cohort, [{"id": c, "name": f"C{c:03d}"} for c in range(1, classes + 1)])
    await _insert(services, CohortMember, [
        {"cohort_id": (u - 1) // CLASS_SIZE + 1, "user_id": u, "joined_at": NOW} for u in range(1, n + 1)])
    mastery, results, items = _learning_rows(n, rng)
    await _insert(services, SkillMastery, mastery)
    await _insert(services, ExerciseResult, results)
    await _insert(services, QuizItem, items)
    inbound, outbound, turns = _traffic(n, rng)
    await _insert(services, InboundMessage, inbound)
    await _insert(services, OutboundMessage, outbound)
    await _insert(services, TurnRecord, turns)
    await _insert(services, SafetyFlag, [
        {"user_id": rng.randint(1, n), "category": "self_harm", "source": "phrases", "excerpt": "…",
         "created_at": NOW} for _ in range(40)])
    await _insert(services, Operator, [
        {"id": 1, "email": "admin@bench", "role": "admin", "password_hash": "-"},
        {"id": 2, "email": "prof@bench", "role": "teacher", "password_hash": "-"}])
    await _insert(services, OperatorCohort, [{"operator_id": 2, "cohort_id": 1}])
    tokens = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    await _insert(services, OperatorSession, [
        {"token_hash": token_hash(t), "operator_id": op, "csrf_token": "x",
         "expires_at": NOW + timedelta(days=1)}
        for op, t in ((1, tokens[0]), (2, tokens[1]))])
    return tokens[0], tokens[1], 1


PAGES = [("overview (admin)", "/admin/", 0), ("overview (teacher)", "/admin/", 1),
         ("class", "/admin/cohorts/C001", 1), ("student", "/admin/students/{student}", 1),
         ("safety flags", "/admin/flags", 0), ("roster.csv", "/admin/cohorts/C001/roster.csv", 1),
         ("results.csv", "/admin/cohorts/C001/results.csv", 1)]


Times = dict[str, tuple[float, float]]  # page: median and p95 in ms


async def time_pages(base: str, tokens: tuple[str, str], student: int, requests: int) -> Times:
    times: Times = {}
    async with aiohttp.ClientSession() as http:
        for name, path, who in PAGES:
            url = base + path.format(student=student)
            headers = {"Cookie": f"{SESSION_COOKIE}={tokens[who]}"}
            took = []
            for n in range(requests + 1):
                started = time.perf_counter()
                async with http.get(url, headers=headers, allow_redirects=False) as resp:
                    await resp.read()
                    assert resp.status == 200, (name, resp.status)
                if n:  # the first one warms the caches
                    took.append((time.perf_counter() - started) * 1000)
            took.sort()
            times[name] = (statistics.median(took), took[max(0, round(0.95 * len(took)) - 1)])
    return times


async def run_one(database_url: str, data_dir: str, students: int, requests: int) -> Times:
    settings = load_settings({"DATA_DIR": data_dir, "DATABASE_URL": database_url, "LOG_LEVEL": "WARNING",
                              "SECRET_KEY": "bench"})
    services = await build_services(settings)
    runner = web.AppRunner(_app(services), access_log=None)
    try:
        started = time.perf_counter()
        admin, teacher, student = await seed(services, students)
        print(f"  seeded in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        await runner.setup()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        await web.SockSite(runner, sock).start()
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        return await time_pages(base, (admin, teacher), student, requests)
    finally:
        await runner.cleanup()
        await services.close()


def _app(services: Services) -> web.Application:
    from bot.channel.web import create_app

    return create_app(services, extra_routes=registered_routes())


async def main_async(args: argparse.Namespace) -> None:
    results: dict[str, Times] = {}
    if args.only in (None, "sqlite"):
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite+aiosqlite:///{tmp}/bench.db"
            await upgrade(url)
            print("SQLite…", file=sys.stderr)
            results["sqlite"] = await run_one(url, tmp, args.students, args.requests)
    if args.only in (None, "postgres"):
        url = await create_postgres_database(args.postgres_admin_url, "deblo_bench_dashboard", durable=False)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                print("PostgreSQL…", file=sys.stderr)
                results["postgres"] = await run_one(url, tmp, args.students, args.requests)
        finally:
            await drop_postgres_database(args.postgres_admin_url, url)
    print(f"\n{args.students} students, classes of {CLASS_SIZE}, a year of results; ms per page "
          f"(median / p95 of {args.requests})\n")
    kinds = list(results)
    print(f"{'page':<20}" + "".join(f"{k + ' median':>18}{k + ' p95':>16}" for k in kinds))
    for name, _path, _who in PAGES:
        print(f"{name:<20}" + "".join(f"{results[k][name][0]:>18.1f}{results[k][name][1]:>16.1f}"
                                      for k in kinds))
    print("\naim: every page under 300 ms on PostgreSQL")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=9, help="timed requests per page (after one warm-up)")
    parser.add_argument("--only", choices=("sqlite", "postgres"))
    parser.add_argument("--postgres-admin-url", default=POSTGRES_ADMIN_URL)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
