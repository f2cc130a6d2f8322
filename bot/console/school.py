"""The school's console: `python -m bot cohorts …` (classes) and `python -m bot operators …` (who
logs in to the dashboard). As `users …` (bot.console.users): every argument, and a
class list's whole file, is checked before the database is touched (exit 2, nothing changed); a
class or operator that is not there (or already is) is exit code 1; a result is printed on stdout,
problems on stderr. bot/cli.py parses the command lines.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bot.config import Settings
from bot.texts import fr_en

__all__ = ["cohorts_command", "operators_command"]

NAME_MAX = 100  # Cohort.name


def _usage_error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _not_found(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1


def _name_problem(name: str) -> str | None:
    if not name.strip() or len(name.strip()) > NAME_MAX:
        return f"a class name is 1 to {NAME_MAX} characters, got {len(name.strip())}"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "a class name has no control characters"
    return None


# --- cohorts ---------------------------------------------------------------------------------


async def cohorts_command(settings: Settings, args: argparse.Namespace) -> int:
    from bot.school.roster_file import RosterError, read_roster, region_of_zone
    from bot.services import build_services

    name = args.name.strip() if getattr(args, "name", None) is not None else ""
    if args.cohorts_command != "list" and (problem := _name_problem(args.name)):
        return _usage_error(problem)
    if args.cohorts_command == "assign":
        from bot.console.assign import assign_command

        return await assign_command(settings, args)
    rows = None
    if args.cohorts_command == "import":
        if args.school is not None and _name_problem(args.school):
            return _usage_error(f"--school must be 1 to {NAME_MAX} characters, without control characters")
        try:
            data = args.file.read_bytes()
        except OSError as exc:
            return _usage_error(f"cannot read {args.file}: {exc.strerror or exc}")
        try:
            rows = read_roster(data, region_of_zone(settings.default_timezone), settings.default_language,
                               args.file.name)
        except RosterError as exc:
            said = fr_en(settings.default_language,
                         f"erreur : {args.file} n'a pas été importé, rien n'a changé :",
                         f"error: {args.file} was not imported, nothing changed:")
            print(f"{said}\n{exc}", file=sys.stderr)
            return 2
    services = await build_services(settings)
    try:
        if args.cohorts_command == "create":
            return await _create(services, name)
        if args.cohorts_command == "list":
            return await _list(services)
        if args.cohorts_command == "show":
            return await _show(services, name, settings.default_language)
        return await _import(services, name, rows or [], args.school)
    finally:
        await services.close()


async def _create(services: Any, name: str) -> int:
    from sqlalchemy.exc import IntegrityError

    from bot.school.classes import find_cohort
    from bot.storage.models import Cohort

    async with services.sessions() as db:
        if await find_cohort(db, name) is not None:
            return _not_found(f"a class named {name!r} already exists")
        db.add(Cohort(name=name, created_at=services.clock()))
        try:
            await db.commit()
        except IntegrityError:
            return _not_found(f"a class named {name!r} already exists")
    print(f"class {name!r} created")
    return 0


async def _list(services: Any) -> int:
    from sqlalchemy import func, select

    from bot.storage.models import Cohort, CohortMember, Operator, OperatorCohort

    async with services.sessions() as db:
        counts = dict((await db.execute(select(CohortMember.cohort_id, func.count())
                                        .group_by(CohortMember.cohort_id))).all())
        teachers: dict[int, list[str]] = {}
        for cohort_id, email in (await db.execute(
            select(OperatorCohort.cohort_id, Operator.email)
            .join(Operator, Operator.id == OperatorCohort.operator_id).order_by(Operator.email))).all():
            teachers.setdefault(cohort_id, []).append(email)
        classes = list(await db.scalars(select(Cohort).order_by(Cohort.name)))
    if not classes:
        print("no class yet (cohorts create NAME)")
    for cohort in classes:
        print(f"{cohort.name}: {counts.get(cohort.id, 0)} student(s); teachers: "
              f"{', '.join(teachers.get(cohort.id, [])) or 'none'}")
    return 0


async def _show(services: Any, name: str, language: str) -> int:
    from bot.console.assign import assignment_lines
    from bot.school.classes import find_cohort, is_active, roster

    now = services.clock()
    async with services.sessions() as db:
        cohort = await find_cohort(db, name)
        if cohort is None:
            return _not_found(f"no class named {name!r} (cohorts list shows them)")
        students = await roster(db, cohort.id)
        homework = await assignment_lines(db, cohort.id, {s.user_id: s.shown() for s in students}, language)
    active = sum(is_active(s, now) for s in students)
    print(f"class {name!r}: {len(students)} student(s), {active} active in the last 7 days")
    for s in students:
        last = f"{s.last_activity:%Y-%m-%d %H:%M}" if s.last_activity else "never wrote"
        print(f"  {s.phone or '-'}  {s.name or '-'}  class {s.level or '-'}  last message {last}")
    for line in homework:
        print(line)
    return 0


async def _import(services: Any, name: str, rows: list[Any], school: str | None) -> int:
    from sqlalchemy.exc import IntegrityError

    from bot.school.classes import find_cohort
    from bot.school.enrolment import enrol_roster, notify_parents

    now = services.clock()
    for attempt in range(2):
        try:
            async with services.sessions() as db:
                cohort = await find_cohort(db, name)
                if cohort is None:
                    return _not_found(f"no class named {name!r} (cohorts create {name!r} first)")
                report = await enrol_roster(db, services, cohort.id, rows, now)
                await db.commit()
            break
        except IntegrityError:
            if attempt:  # a number wrote its first message at that very moment, twice
                raise
    sent = await notify_parents(services, report, school.strip() if school else None, name, now)
    print(_import_text(name, report, sent, services.settings.signup_credits))
    for line in report.not_linked:
        print(f"warning: {line}", file=sys.stderr)
    failed = [s for s in sent if not s.sent]
    for notice in failed:
        print(f"warning: the SMS to the parent {notice.phone} was not sent ({notice.reason})",
              file=sys.stderr)
    return 0


def _import_text(name: str, report: Any, sent: list[Any], signup_credits: int) -> str:
    head = f"class {name!r}: {report.rows} row(s)"
    if not report.changed:
        return f"{head}; nothing changed (every student already enrolled, in the class, named and linked)"
    parts = [f"{report.created} new number(s)", f"{report.enrolled} enrolled as student(s)",
             f"{report.joined} added to the class", f"{report.named} name(s) set",
             f"{report.levelled} level(s) set",
             f"{report.linked} parent link(s) confirmed"]
    if report.credited:
        parts.append(f"signup credits +{signup_credits} for {report.credited}")
    ok = sum(1 for s in sent if s.sent)
    parts.append(f"parents' SMS: {ok} sent" + (f", {len(sent) - ok} not sent" if len(sent) > ok else ""))
    return f"{head}; " + ", ".join(parts)


# --- operators -------------------------------------------------------------------------------


def _read_password() -> str:
    if sys.stdin.isatty():
        import getpass

        return getpass.getpass("password: ")
    line = sys.stdin.readline()
    return line[:-1] if line.endswith("\n") else line


async def operators_command(settings: Settings, args: argparse.Namespace) -> int:
    from bot.school.operators import OperatorError, password_problem, role_problem, valid_email
    from bot.services import build_services

    email = valid_email(args.email) if args.operators_command != "list" else ""
    if email is None:
        return _usage_error(f"{args.email!r} is not one e-mail address (e.g. awa.kone@ecole.ci)")
    cohorts = [c.strip() for c in getattr(args, "cohort", [])]
    password: str | None = None
    if args.operators_command == "add":
        problem = role_problem(args.role, cohorts) or next(filter(None, map(_name_problem, cohorts)), None)
        if problem:
            return _usage_error(problem)
        if args.password_stdin:
            password = _read_password().rstrip("\r")
            if problem := password_problem(password):
                return _usage_error(problem)
    services = await build_services(settings)
    try:
        if args.operators_command == "list":
            return await _operators_list(services)
        if args.operators_command == "remove":
            return await _operators_remove(services, email)
        return await _operators_add(services, email, args.role, cohorts, password)
    except OperatorError as exc:
        return _not_found(str(exc))
    finally:
        await services.close()


async def _operators_add(services: Any, email: str, role: str, cohorts: list[str],
                         password: str | None) -> int:
    import asyncio

    from bot.school.operators import add_operator
    from bot.school.passwords import hash_password, random_password

    shown = password is None
    password = password if password is not None else random_password()
    hashed = await asyncio.to_thread(hash_password, password)
    async with services.sessions() as db:
        await add_operator(db, email, role, cohorts, hashed, services.clock())
        await db.commit()
    what = f"{email}: {role}" + (f" of {', '.join(cohorts)}" if cohorts else "") + ", added"
    print(what)
    if shown:
        # Shown once: only its Argon2id hash is kept.
        print(f"password (shown once, give it to them; it is not stored): {password}")
    return 0


async def _operators_list(services: Any) -> int:
    from bot.school.operators import list_operators

    async with services.sessions() as db:
        people = await list_operators(db)
    if not people:
        print("no operator yet (operators add EMAIL --role admin)")
    for person in people:
        classes = f" of {', '.join(person.cohorts)}" if person.cohorts else ""
        last = f"{person.last_login_at:%Y-%m-%d %H:%M}" if person.last_login_at else "never"
        print(f"{person.email}: {person.role}{classes}; added {person.created_at:%Y-%m-%d}, "
              f"last login {last}")
    return 0


async def _operators_remove(services: Any, email: str) -> int:
    from bot.school.operators import remove_operator

    async with services.sessions() as db:
        await remove_operator(db, email)
        await db.commit()
    print(f"{email}: removed (their sessions ended)")
    return 0
