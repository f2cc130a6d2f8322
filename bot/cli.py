"""The composition root: `python -m bot serve|worker|chat|db upgrade|users …|cohorts …|operators …`.

This module (with bot/__main__.py) is the only part of `bot` that imports `handlers` and the
modules owning periodic jobs and extra web routes; the rest of `bot` receives them from here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
import uuid
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, NoReturn

from bot.cli_school import school_parsers
from bot.config import REQUIRED_FOR_SERVE, ConfigError, Settings, load_settings

if TYPE_CHECKING:
    from aiohttp import web

    from bot.periodic import Job
    from bot.pipeline.job_workers import RunJob
    from bot.pipeline.messages import Dispatch
    from bot.services import Services

log = logging.getLogger("bot.cli")


# --- what the application is made of ----------------------------------------------------------


def dispatch_function(warm: bool = True) -> Dispatch:
    """The handler chain the workers run for each inbound message; with `warm`, its modules and the
    24 tools' are imported now: imported at the first message instead (matplotlib, the document
    libraries), they held the event loop for seconds while turns were running, long enough on a
    busy machine for a user's lock and the message's lease to lapse and another worker to take the
    message over. A process that runs no workers (`serve` beside `worker` processes) skips it."""
    from handlers import chain, dispatch
    from tools import all_tools

    if warm:
        chain()
        all_tools()
    return dispatch


def job_runner() -> RunJob:
    """What a background job runs (bot.pipeline.job_workers.JobWorkers): the agent turn carried on."""
    from handlers.turn import run_job

    return run_job


def registered_jobs(settings: Settings | None = None) -> list[Job]:
    """Periodic jobs (bot.periodic.Job) run by every worker: each once per period across
    processes, and each claims its rows atomically; in the background lane (bot.lanes)."""
    from bot.assistant.tasks import reminder_jobs
    from bot.learning import nudge_jobs, reengage_jobs, weekly_note_jobs
    from bot.learning.progress import weekly_summary_jobs
    from bot.library import index_jobs
    from bot.pipeline.retention import retention_jobs
    from bot.safety import escalation_jobs
    from bot.school import assignment_jobs, teacher_summary_jobs

    return [*weekly_summary_jobs(), *teacher_summary_jobs(), *reminder_jobs(), *nudge_jobs(),
            *reengage_jobs(), *weekly_note_jobs(), *retention_jobs(), *escalation_jobs(), *assignment_jobs(),
            *index_jobs(*([settings.library.index_interval_s] if settings is not None else []))]


def registered_routes() -> list[web.AbstractRouteDef]:
    """Extra aiohttp routes (e.g. a payment provider's webhook) served next to Twilio's."""
    routes: list[web.AbstractRouteDef] = []
    from bot.web.admin import ROUTES as admin_routes
    from bot.web.job_stream import ROUTES as job_page_routes
    from bot.web.payment_webhook import ROUTES as payment_routes
    from bot.web.progress_page import ROUTES as progress_page_routes

    routes += payment_routes
    routes += job_page_routes  # /jobs/{id}: a background job's live progress page
    routes += admin_routes  # /admin/: the dashboard of operators and teachers
    routes += progress_page_routes  # /progress/{id}: a student's progress page
    return routes


def startup_checks(settings: Settings) -> None:
    """Says at start-up what is off, so an operator is not surprised by a missing tool."""
    from bot.doctor import log_summary
    from bot.media import speech
    from bot.sandbox.bwrap import log_availability

    log_summary(settings)  # settings, tools and disk, as `doctor` shows them (providers not asked)
    log_availability(settings)
    speech.log_availability(settings)  # Tesseract and ffmpeg: photos read as text, voice notes
    if settings.browse_allow_private or settings.browse_test_allow:
        log.warning("browse_url may reach private addresses: BROWSE_ALLOW_*_FOR_TESTS is for tests only")
    if settings.allow_placeholders:
        from bot.config_secrets import placeholders

        log.warning("ALLOW_PLACEHOLDERS=1: NOT FOR REAL USERS, a local trial only, with the placeholders "
                    "of examples in %s", ", ".join(placeholders(settings)) or "no setting now")


# --- commands ----------------------------------------------------------------------------------


def _settings(require: tuple[str, ...] = ()) -> Settings:
    try:
        return load_settings(require=require)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def _serving_settings(require: tuple[str, ...]) -> Settings:
    """The settings of `serve` and `worker`, which never start with a weak SECRET_KEY nor (without
    ALLOW_PLACEHOLDERS) a placeholder of an example: one line says which variable and what to do."""
    from bot.config_secrets import refusal

    settings = _settings(require)
    refused = refusal(settings)
    if refused is not None:
        print(f"error: {refused.line}", file=sys.stderr)
        raise SystemExit(2)
    return settings


def _schema_ready(settings: Settings) -> bool:
    """The database's schema is the code's before any work is taken: migrated now with AUTO_MIGRATE,
    else one line says to run `db upgrade` (an SQL traceback at the first webhook said nothing)."""
    from bot.storage.migrate import ready_at_start

    problem = asyncio.run(ready_at_start(settings.database_url, settings.auto_migrate))
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
    return problem is None


async def _serve(settings: Settings, workers: int | None, with_workers: bool = False) -> None:
    from aiohttp import web

    from bot.channel.web import create_app, start_metrics_site
    from bot.pipeline.job_workers import JobWorkers
    from bot.pipeline.workers import Pipeline
    from bot.services import build_services
    from bot.warm import warm_up

    startup_checks(settings)
    services = await build_services(settings)
    app = create_app(services, extra_routes=registered_routes())  # /metrics: METRICS_PORT, or token
    # On SIGTERM the webhooks in flight get SHUTDOWN_GRACE_S to be answered (see _stop_all).
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=settings.shutdown_grace_s)
    await runner.setup()
    # --with-workers: the message and job workers run here with Redis too (one process for it all,
    # or next to `worker` processes). What they run is imported before the first webhook is taken.
    run_workers = with_workers or (settings.single_process if workers is None else workers > 0)
    dispatch = dispatch_function(warm=run_workers)
    site = web.TCPSite(runner, settings.host, settings.port)
    await site.start()
    metrics_site = await start_metrics_site(services)
    pipeline = Pipeline(services, dispatch, concurrency=workers or None, jobs=registered_jobs(settings))
    background = JobWorkers(services, job_runner()) if run_workers else None
    if background is not None:
        await warm_up(services)  # the first message as fast as the tenth (bot.warm)
        await pipeline.start()
        await background.start()
    log.info("serving", extra={"host": settings.host, "port": settings.port, "workers": run_workers,
                               "public_base_url": settings.public_base_url,
                               "metrics_port": settings.metrics_port or None})
    try:
        await _until_signalled()
    finally:
        grace = settings.shutdown_grace_s
        await _stop_all(runner.cleanup(), *([background.stop(grace), pipeline.stop(grace)]
                                            if background is not None else []),
                        *([metrics_site.cleanup()] if metrics_site is not None else []))
        await services.close()


async def _worker(settings: Settings, concurrency: int | None) -> None:
    from bot.channel.web import start_metrics_site
    from bot.pipeline.job_workers import JobWorkers
    from bot.pipeline.workers import Pipeline
    from bot.services import build_services
    from bot.warm import warm_up

    startup_checks(settings)
    services = await build_services(settings)
    pipeline = Pipeline(services, dispatch_function(), concurrency=concurrency,
                        jobs=registered_jobs(settings))
    background = JobWorkers(services, job_runner())
    await warm_up(services)  # the first message as fast as the tenth (bot.warm)
    await pipeline.start()
    await background.start()
    metrics_site = await start_metrics_site(services)
    log.info("worker started", extra={"concurrency": pipeline.concurrency,
                                      "job_concurrency": background.concurrency,
                                      "metrics_port": settings.metrics_port or None})
    try:
        await _until_signalled()
    finally:
        grace = settings.shutdown_grace_s
        await _stop_all(background.stop(grace), pipeline.stop(grace))
        if metrics_site is not None:
            await metrics_site.cleanup()
        await services.close()


async def _stop_all(*stops: Awaitable[None]) -> None:
    """Runs the stops side by side, so that they share one SHUTDOWN_GRACE_S: the web server stops
    listening and answers the webhooks in flight while the workers end their turns and jobs' steps."""
    for result in await asyncio.gather(*stops, return_exceptions=True):
        if isinstance(result, BaseException):
            log.error("error while stopping", exc_info=result)


async def _until_signalled() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def _chat(settings: Settings, phone: str, lines: Sequence[str] | None = None) -> None:
    """A terminal conversation through the same pipeline and handlers (no Twilio needed)."""
    from sqlalchemy import select

    from bot.channel.console import ConsoleSink
    from bot.channel.inbound import normalise_phone
    from bot.channel.locale import default_locale, locale_for
    from bot.pipeline.workers import Pipeline
    from bot.services import build_services
    from bot.storage.migrate import upgrade
    from bot.storage.models import InboundMessage, User
    from bot.storage.state import MemoryState

    number = normalise_phone(phone)
    if number is None:
        print(f"error: {phone!r} is not a phone number with its country code (e.g. +2250700000001)",
              file=sys.stderr)
        raise SystemExit(2)
    if settings.database_url.startswith("sqlite"):
        await upgrade(settings.database_url)
    services = await build_services(settings)
    await services.state.close()
    services.state = MemoryState()  # the terminal conversation is private to this process
    services.console = ConsoleSink()
    # One conversation, no other turn or lease to hold up: imported as the messages need it.
    pipeline = Pipeline(services, dispatch_function(warm=False), concurrency=1, jobs=())
    await pipeline.start()
    print("Deblo: conversation in the terminal. Ctrl-D to quit.", flush=True)
    loop = asyncio.get_running_loop()
    feed = iter(lines) if lines is not None else None
    try:
        while True:
            if feed is not None:
                text = next(feed, None)
            else:
                text = await loop.run_in_executor(None, _read_line)
            if text is None:
                break
            if not text.strip():
                continue
            now = services.clock()
            async with services.sessions() as db:
                user = await db.scalar(select(User).where(User.phone == number))
                if user is None:
                    user = User(phone=number, onboarding_step="new", mode="guest", created_at=now,
                                **locale_for(number, default_locale(settings)).columns())
                    db.add(user)
                    await db.flush()
                row = InboundMessage(
                    message_sid=f"CLI{uuid.uuid4().hex}", user_id=user.id, channel="cli", from_addr=number,
                    to_addr="cli", body=text, status="pending", created_at=now,
                )
                db.add(row)
                await db.commit()
                row_id, user_id = row.id, user.id
            await services.state.push_user(user_id)
            await _wait_done(services, row_id)
    finally:
        await pipeline.stop()
        await services.close()


def _read_line() -> str | None:
    try:
        return input("\nVous > ")
    except EOFError:
        return None


async def _wait_done(services: Services, row_id: int) -> None:
    from bot.storage.models import InboundMessage

    while True:
        async with services.sessions() as db:
            row = await db.get(InboundMessage, row_id)
            # None: erased with its user (SUPPRIMER); delivering/undelivered: handled (bot.channel.outbound).
            if row is None or row.status in ("done", "failed", "delivering", "undelivered"):
                return
        await asyncio.sleep(0.05)


def _usage_error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


class _Parser(argparse.ArgumentParser):
    """A wrong argument is one clear line and exit code 2 (scripts read it; no usage dump)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m bot", description="Deblo bot")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="web server (and the workers: without REDIS_URL, or --with-workers)")
    serve.add_argument("--workers", type=int, default=None,
                       help="worker coroutines in this process (default: WORKER_CONCURRENCY without Redis, "
                            "none with Redis)")
    serve.add_argument("--with-workers", action="store_true",
                       help="run the message and job workers in this process with REDIS_URL too")
    worker = sub.add_parser("worker", help="process queued messages (with REDIS_URL)")
    worker.add_argument("--concurrency", type=int, default=None)
    chat = sub.add_parser("chat", help="talk to the bot in the terminal")
    chat.add_argument("--phone", default="+2250700000001")
    db = sub.add_parser("db", help="database")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    db_sub.add_parser("upgrade", help="apply the migrations")
    spool = sub.add_parser("spool", help="the inbound spool (DATA_DIR/spool)")
    spool.add_subparsers(dest="spool_command", required=True).add_parser(
        "retry", help="store the entries set aside in dead.jsonl; exit 1 if some stay")
    users = sub.add_parser("users", help="the operator's console: enrol, credit, show, export, forget, "
                                         "class, time zone")
    users_sub = users.add_subparsers(dest="users_command", required=True)
    set_mode = users_sub.add_parser("set-mode", help="enrol a number (ready to use) or change its mode")
    set_mode.add_argument("phone", help="with its country code, e.g. +2250700000001")
    set_mode.add_argument("mode", choices=("guest", "child", "pro"))
    credit = users_sub.add_parser("credit", help="add N credits through the ledger (negative N takes back)")
    credit.add_argument("phone")
    credit.add_argument("amount", metavar="N", type=int)
    credit.add_argument("--reason", default=None, help="why, kept with the ledger row")
    show = users_sub.add_parser("show", help="profile, mode, balance, activity, delivery state, links")
    show.add_argument("phone")
    show.add_argument("--json", action="store_true")
    export = users_sub.add_parser("export", help="everything kept about the person, as JSON on stdout")
    export.add_argument("phone")
    forget = users_sub.add_parser("forget", help="erase the person (the anonymised ledger stays)")
    forget.add_argument("phone")
    set_level = users_sub.add_parser("set-level", help="the student's class (CP1 … Tle, Université, Autre)")
    set_level.add_argument("phone")
    set_level.add_argument("level", help="e.g. 4e, CM2, Tle (as CLASSE 4e)")
    set_timezone = users_sub.add_parser("set-timezone", help="the user's time zone (as FUSEAU Douala)")
    set_timezone.add_argument("phone")
    set_timezone.add_argument("zone", help="an IANA name (Africa/Douala) or a city (Douala, Yaoundé)")
    sub.add_parser("doctor", help="check every setting and dependency: OK / OFF / FAIL, with the fix")
    school_parsers(sub)
    library = sub.add_parser("library", help="the files' search index")
    reindex = library.add_subparsers(dest="library_command", required=True).add_parser(
        "reindex", help="cut every file (of one number, or all) into chunks again and embed them")
    reindex.add_argument("phone", nargs="?", default=None, help="with its country code; all users without it")
    costs = sub.add_parser("costs", help="the cost meter")
    costs.add_subparsers(dest="costs_command", required=True).add_parser(
        "rates", help="the rate table that prices every message: its date, sources and prices")
    return parser


def tune_gc() -> None:
    """For the long-running processes: what was imported at start-up is moved out of the collector's
    sight (gc.freeze), and the youngest generation is collected every 10,000 allocations instead of
    700. When hundreds of answers arrive at once, each conversation allocates many short-lived
    objects, and the default threshold ran a collection every few of them (see bench/loop)."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 20, 20)


def _not_text(argv: Sequence[str]) -> str | None:
    """The first argument whose bytes are not UTF-8, as it was written (Python hands such bytes on
    as lone surrogates, which no database, file or terminal takes: refused before any of them)."""
    for argument in argv:
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError:
            return ascii(argument)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    from bot import logs

    if (odd := _not_text(sys.argv[1:] if argv is None else argv)) is not None:
        return _usage_error(f"the argument {odd} is not UTF-8 text")
    args = build_parser().parse_args(argv)
    if args.command in ("serve", "worker"):
        tune_gc()
    if args.command == "serve":
        if args.with_workers and args.workers == 0:
            return _usage_error("--with-workers runs workers: --workers must be 1 or more")
        settings = _serving_settings(REQUIRED_FOR_SERVE)
        logs.setup(settings.log_level)
        if not _schema_ready(settings):
            return 2
        asyncio.run(_serve(settings, args.workers, args.with_workers))
    elif args.command == "worker":
        # Workers sign file links that `serve` checks: they need the same SECRET_KEY.
        settings = _serving_settings(("SECRET_KEY",))
        logs.setup(settings.log_level)
        if settings.single_process:
            print("error: a separate worker needs REDIS_URL (without it, `serve` runs the workers itself); "
                  "see .env.example", file=sys.stderr)
            return 2
        if not _schema_ready(settings):
            return 2
        asyncio.run(_worker(settings, args.concurrency))
    elif args.command == "chat":
        settings = _settings()
        logs.setup("WARNING" if settings.log_level == "INFO" else settings.log_level)
        asyncio.run(_chat(settings, args.phone))
    elif args.command == "db":
        from bot.storage.migrate import upgrade

        settings = _settings()
        logs.setup(settings.log_level)
        asyncio.run(upgrade(settings.database_url))
        print("database is up to date")
    elif args.command == "spool":
        from bot.channel.spool_retry import retry

        settings = _settings()
        logs.setup(settings.log_level)
        return asyncio.run(retry(settings))
    elif args.command == "doctor":
        return _doctor()
    elif args.command in ("users", "cohorts", "operators", "library", "costs"):
        return _console(args)
    return 0


def _console(args: argparse.Namespace) -> int:
    """The operator's consoles: users, cohorts, operators, library. Only problems on stderr: stdout
    may be a JSON document (users show --json, export)."""
    from bot import logs

    settings = _settings()
    logs.setup("WARNING" if settings.log_level == "INFO" else settings.log_level)
    from bot import console

    if args.command == "users":
        return asyncio.run(console.users(settings, args))
    if args.command in ("library", "costs"):
        command = console.library_command if args.command == "library" else console.costs_command
        return asyncio.run(command(settings, args))
    command = console.cohorts_command if args.command == "cohorts" else console.operators_command
    return asyncio.run(command(settings, args))


def _doctor() -> int:
    """Prints the table; exit 1 when a check FAILs (2 when the settings cannot even be read)."""
    from bot import doctor, logs

    settings = _settings()
    try:
        load_settings(require=REQUIRED_FOR_SERVE)
        missing = None
    except ConfigError as exc:
        missing = str(exc)
    logs.setup("ERROR")  # the table says it all; the checks' own warnings would repeat it
    checks = asyncio.run(doctor.run_checks(settings, missing))
    print(doctor.table(checks))
    return 1 if doctor.failed(checks) else 0
