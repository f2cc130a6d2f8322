"""The school's console: `python -m bot cohorts …` (classes) and `python -m bot operators …` (who
logs in to the dashboard). As `users …` (bot.console.users): every argument, and a
class list's whole file, is checked before the database is touched (exit 2, nothing changed); a
class or operator that is not there (or already is) is exit code 1; a result is printed on stdout,
problems on stderr, all in the operator's language (DEFAULT_LANGUAGE: an operator has none of their
own), moments in the school's time zone (DEFAULT_TIMEZONE). bot/cli.py parses the command lines.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bot.config import Settings
from bot.console.cohort_errors import no_class
from bot.console.pool import credits_problem, fund, pool_line
from bot.formats import when
from bot.texts import fr_en

__all__ = ["cohorts_command", "operators_command"]

NAME_MAX = 100  # Cohort.name


def _error(lang: str, message: str) -> None:
    print(fr_en(lang, "erreur : ", "error: ") + message, file=sys.stderr)


def _usage_error(lang: str, message: str) -> int:
    _error(lang, message)
    return 2


def _not_found(lang: str, message: str) -> int:
    _error(lang, message)
    return 1


def _name_problem(lang: str, name: str) -> str | None:
    if not name.strip() or len(name.strip()) > NAME_MAX:
        return fr_en(lang, f"un nom de classe fait de 1 à {NAME_MAX} caractères, pas {len(name.strip())}",
                     f"a class name is 1 to {NAME_MAX} characters, got {len(name.strip())}")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return fr_en(lang, "un nom de classe ne contient pas de caractère de contrôle",
                     "a class name has no control characters")
    return None


# --- cohorts ---------------------------------------------------------------------------------


async def cohorts_command(settings: Settings, args: argparse.Namespace) -> int:
    from bot.school.roster_file import RosterError, read_roster, region_of_zone
    from bot.services import build_services

    lang = settings.default_language
    name = args.name.strip() if getattr(args, "name", None) is not None else ""
    if args.cohorts_command != "list" and (problem := _name_problem(lang, args.name)):
        return _usage_error(lang, problem)
    if args.cohorts_command == "items":
        from bot.console.class_items import items_command

        return await items_command(settings, args, name)
    if args.cohorts_command == "files":
        from bot.console.class_files import files_command

        return await files_command(settings, args, name)
    if args.cohorts_command == "assign":
        from bot.console.assign import assign_command

        return await assign_command(settings, args)
    rows = None
    if args.cohorts_command == "fund" and (problem := credits_problem(lang, args.credits)):
        return _usage_error(lang, problem)
    if args.cohorts_command == "import":
        if args.school is not None and _name_problem(lang, args.school):
            return _usage_error(lang, fr_en(
                lang, f"--school fait de 1 à {NAME_MAX} caractères, sans caractère de contrôle",
                f"--school must be 1 to {NAME_MAX} characters, without control characters"))
        try:
            data = args.file.read_bytes()
        except OSError as exc:
            return _usage_error(lang, fr_en(lang, f"impossible de lire {args.file} : {exc.strerror or exc}",
                                            f"cannot read {args.file}: {exc.strerror or exc}"))
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
            return await _show(services, name)
        if args.cohorts_command == "fund":
            return await fund(services, lang, name, int(args.credits.strip().replace("_", "")))
        return await _import(services, name, rows or [], args.school)
    finally:
        await services.close()


async def _create(services: Any, name: str) -> int:
    from sqlalchemy.exc import IntegrityError

    from bot.school.classes import find_cohort
    from bot.storage.models import Cohort

    lang = services.settings.default_language
    exists = fr_en(lang, f"la classe {name!r} existe déjà", f"a class named {name!r} already exists")
    async with services.sessions() as db:
        if await find_cohort(db, name) is not None:
            return _not_found(lang, exists)
        db.add(Cohort(name=name, created_at=services.clock()))
        try:
            await db.commit()
        except IntegrityError:
            return _not_found(lang, exists)
    print(fr_en(lang, f"classe {name!r} créée", f"class {name!r} created"))
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
    lang = services.settings.default_language
    if not classes:
        print(fr_en(lang, "aucune classe pour l'instant (cohorts create NOM)",
                    "no class yet (cohorts create NAME)"))
    for cohort in classes:
        emails = ", ".join(teachers.get(cohort.id, [])) or fr_en(lang, "aucun", "none")
        print(fr_en(lang, f"{cohort.name} : {counts.get(cohort.id, 0)} élève(s) ; enseignants : {emails}",
                    f"{cohort.name}: {counts.get(cohort.id, 0)} student(s); teachers: {emails}"))
    return 0


async def _show(services: Any, name: str) -> int:
    from bot.console.assign import assignment_lines
    from bot.school.classes import find_cohort, is_active, roster

    now, settings = services.clock(), services.settings
    lang = settings.default_language
    async with services.sessions() as db:
        cohort = await find_cohort(db, name)
        if cohort is None:
            return no_class(lang, name)
        students = await roster(db, cohort.id)
        pool_text = await pool_line(db, lang, cohort.id, now)
        homework = await assignment_lines(db, cohort.id, {s.user_id: s.shown() for s in students}, lang)
    active = sum(is_active(s, now) for s in students)
    print(fr_en(lang, f"classe {name!r} : {len(students)} élève(s), {active} actif(s) ces 7 derniers jours",
                f"class {name!r}: {len(students)} student(s), {active} active in the last 7 days"))
    print(pool_text)
    for s in students:
        last = (when(s.last_activity, lang, settings.default_timezone) if s.last_activity
                else fr_en(lang, "n'a jamais écrit", "never wrote"))
        who = f"  {s.phone or '-'}  {s.name or '-'}  "
        print(who + fr_en(lang, f"classe {s.level or '-'}  dernier message {last}",
                          f"class {s.level or '-'}  last message {last}"))
    for line in homework:
        print(line)
    return 0


async def _import(services: Any, name: str, rows: list[Any], school: str | None) -> int:
    from sqlalchemy.exc import IntegrityError

    from bot.school.classes import find_cohort
    from bot.school.enrolment import enrol_roster, notify_parents

    now, lang = services.clock(), services.settings.default_language
    for attempt in range(2):
        try:
            async with services.sessions() as db:
                cohort = await find_cohort(db, name)
                if cohort is None:
                    return _not_found(lang, fr_en(
                        lang, f"aucune classe nommée {name!r} (cohorts create {name!r} d'abord)",
                        f"no class named {name!r} (cohorts create {name!r} first)"))
                who = f"school {school.strip()!r}, class {name!r}" if school else f"school, class {name!r}"
                report = await enrol_roster(db, services, cohort.id, rows, now, school=who)
                await db.commit()
            break
        except IntegrityError:
            if attempt:  # a number wrote its first message at that very moment, twice
                raise
    sent = await notify_parents(services, report, school.strip() if school else None, name, now)
    print(_import_text(lang, name, report, sent, services.settings.signup_credits))
    warning = fr_en(lang, "attention : ", "warning: ")
    for line in report.not_linked:
        print(f"{warning}{line}", file=sys.stderr)
    failed = [s for s in sent if not s.sent]
    for notice in failed:
        print(warning + fr_en(lang, f"le SMS au parent {notice.phone} n'est pas parti ({notice.reason})",
                              f"the SMS to the parent {notice.phone} was not sent ({notice.reason})"),
              file=sys.stderr)
    return 0


def _import_text(lang: str, name: str, report: Any, sent: list[Any], signup_credits: int) -> str:
    head = fr_en(lang, f"classe {name!r} : {report.rows} ligne(s)", f"class {name!r}: {report.rows} row(s)")
    if not report.changed:
        return head + fr_en(
            lang, " ; rien n'a changé (chaque élève déjà inscrit, dans la classe, nommé et relié)",
            "; nothing changed (every student already enrolled, in the class, named and linked)")
    r, ok = report, sum(1 for s in sent if s.sent)
    not_sent = len(sent) - ok
    parts = fr_en(lang, [
        f"{r.created} nouveau(x) numéro(s)", f"{r.enrolled} inscrit(s) comme élève(s)",
        f"{r.joined} ajouté(s) à la classe", f"{r.named} nom(s) donné(s)", f"{r.levelled} niveau(x) donné(s)",
        f"{r.linked} lien(s) parent confirmé(s)",
        *([f"crédits d'inscription +{signup_credits} pour {r.credited}"] if r.credited else []),
        *([f"consentement de l'école enregistré pour {r.consented}"] if r.consented else []),
        f"SMS aux parents : {ok} envoyé(s)" + (f", {not_sent} non envoyé(s)" if not_sent else "")], [
        f"{r.created} new number(s)", f"{r.enrolled} enrolled as student(s)",
        f"{r.joined} added to the class", f"{r.named} name(s) set", f"{r.levelled} level(s) set",
        f"{r.linked} parent link(s) confirmed",
        *([f"signup credits +{signup_credits} for {r.credited}"] if r.credited else []),
        *([f"the school's consent recorded for {r.consented}"] if r.consented else []),
        f"parents' SMS: {ok} sent" + (f", {not_sent} not sent" if not_sent else "")])
    return head + fr_en(lang, " ; ", "; ") + ", ".join(parts)


# --- operators -------------------------------------------------------------------------------


def _read_password(lang: str) -> str:
    if sys.stdin.isatty():
        import getpass

        return getpass.getpass(fr_en(lang, "mot de passe : ", "password: "))
    line = sys.stdin.readline()
    return line[:-1] if line.endswith("\n") else line


async def operators_command(settings: Settings, args: argparse.Namespace) -> int:
    from bot.school.operators import OperatorError, password_problem, role_problem, valid_email
    from bot.services import build_services

    lang = settings.default_language
    email = valid_email(args.email) if args.operators_command != "list" else ""
    if email is None:
        return _usage_error(lang, fr_en(
            lang, f"{args.email!r} n'est pas une adresse e-mail (ex. awa.kone@ecole.ci)",
            f"{args.email!r} is not one e-mail address (e.g. awa.kone@ecole.ci)"))
    cohorts = [c.strip() for c in getattr(args, "cohort", [])]
    password: str | None = None
    if args.operators_command == "add":
        problem = role_problem(args.role, cohorts, lang) or next(
            filter(None, (_name_problem(lang, c) for c in cohorts)), None)
        if problem:
            return _usage_error(lang, problem)
        if args.password_stdin:
            password = _read_password(lang).rstrip("\r")
            if problem := password_problem(password, lang):
                return _usage_error(lang, problem)
    services = await build_services(settings)
    try:
        if args.operators_command == "list":
            return await _operators_list(services)
        if args.operators_command == "remove":
            return await _operators_remove(services, email)
        return await _operators_add(services, email, args.role, cohorts, password)
    except OperatorError as exc:
        return _not_found(lang, str(exc))
    finally:
        await services.close()


async def _operators_add(services: Any, email: str, role: str, cohorts: list[str],
                         password: str | None) -> int:
    import asyncio

    from bot.school.operators import add_operator
    from bot.school.passwords import hash_password, random_password

    lang = services.settings.default_language
    shown = password is None
    password = password if password is not None else random_password()
    hashed = await asyncio.to_thread(hash_password, password)
    async with services.sessions() as db:
        await add_operator(db, email, role, cohorts, hashed, services.clock(), lang)
        await db.commit()
    print(_operator_line(lang, email, role, cohorts) + fr_en(lang, ", ajouté", ", added"))
    if shown:
        # Shown once: only its Argon2id hash is kept.
        print(fr_en(lang, "mot de passe (montré une fois, à lui donner ; il n'est pas gardé) : ",
                    "password (shown once, give it to them; it is not stored): ") + password)
    return 0


def _operator_line(lang: str, email: str, role: str, cohorts: list[str] | tuple[str, ...]) -> str:
    """« awa@ecole.ci : teacher de 6e A, 6e B » / « awa@ecole.ci: teacher of 6e A, 6e B » (the role as
    --role takes it)."""
    classes = fr_en(lang, " de ", " of ") + ", ".join(cohorts) if cohorts else ""
    return fr_en(lang, f"{email} : ", f"{email}: ") + role + classes


async def _operators_list(services: Any) -> int:
    from bot.school.operators import list_operators

    settings = services.settings
    lang, zone = settings.default_language, settings.default_timezone
    async with services.sessions() as db:
        people = await list_operators(db)
    if not people:
        print(fr_en(lang, "aucun accès pour l'instant (operators add EMAIL --role admin)",
                    "no operator yet (operators add EMAIL --role admin)"))
    for person in people:
        added = when(person.created_at, lang, zone)
        last = (when(person.last_login_at, lang, zone) if person.last_login_at
                else fr_en(lang, "jamais", "never"))
        print(_operator_line(lang, person.email, person.role, person.cohorts)
              + fr_en(lang, f" ; ajouté le {added}, dernière connexion : {last}",
                      f"; added {added}, last login {last}"))
    return 0


async def _operators_remove(services: Any, email: str) -> int:
    from bot.school.operators import remove_operator

    lang = services.settings.default_language
    async with services.sessions() as db:
        await remove_operator(db, email, lang)
        await db.commit()
    print(fr_en(lang, f"{email} : retiré (ses sessions sont fermées)",
                f"{email}: removed (their sessions ended)"))
    return 0
