"""The operator's console, `python -m bot users …` (bot/cli.py parses the command line): each
command checks its arguments before the database is touched (exit 2, nothing changed), runs, and
prints one result; an unknown number is exit code 1.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bot.config import Settings
from bot.learning import LEVELS, parse_level


def _usage_error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _no_user(number: str, hint: str = "") -> int:
    print(f"error: no user with the number {number}{hint}", file=sys.stderr)
    return 1


async def users(settings: Settings, args: argparse.Namespace) -> int:
    """`users …`: every argument is checked before the database is touched (exit 2, nothing changed)."""
    from bot.accounts import AccountError
    from bot.channel.inbound import normalise_phone
    from bot.channel.locale import find_zone
    from bot.console import credit as operator_credit
    from bot.services import build_services

    number = normalise_phone(args.phone)
    if number is None:
        return _usage_error(f"{args.phone!r} is not a phone number with its country code "
                            "(e.g. +2250700000001)")
    if args.users_command == "credit":
        if args.amount == 0:
            return _usage_error("N must be a whole number other than 0 (negative takes credits back)")
        if args.reason is not None and not 0 < len(operator_credit.clean_note(args.reason) or "") <= 200:
            return _usage_error("--reason must be 1 to 200 characters (control characters do not count)")
    if args.users_command == "set-level" and parse_level(args.level) is None:
        return _usage_error(f"{args.level!r} is not a class; one of: {', '.join(LEVELS)}")
    if args.users_command == "set-timezone" and find_zone(args.zone) is None:
        return _usage_error(f"{args.zone!r} is not a time zone: an IANA name (Africa/Douala) or a city")
    command = {"set-mode": _users_set_mode, "credit": _users_credit, "show": _users_show,
               "export": _users_export, "forget": _users_forget,
               "set-level": _users_set_level, "set-timezone": _users_set_timezone}[args.users_command]
    services = await build_services(settings)
    try:
        return await command(services, number, args)
    except AccountError as exc:
        return _usage_error(str(exc))
    finally:
        await services.close()


async def _users_set_mode(services: Any, number: str, args: argparse.Namespace) -> int:
    from sqlalchemy.exc import IntegrityError

    from bot import accounts
    from bot.channel.locale import default_locale, locale_for

    for attempt in range(2):
        try:
            async with services.sessions() as db:
                place = locale_for(number, default_locale(services.settings)).columns()
                user, created, granted = await accounts.enrol(
                    db, number, args.mode, services.settings.signup_credits, services.clock(), place)
                await db.commit()
            break
        except IntegrityError:
            if attempt:  # the number was created by its own first message at that very moment
                raise
    what = [f"{number}: mode {user.mode}, role {user.role or '-'}"]
    if created:
        what.append("new user, ready to use")
    if granted is not None:
        what.append(f"signup credits +{services.settings.signup_credits}")
    what.append(f"balance {granted if granted is not None else user.credit_balance}")
    print("; ".join(what))
    return 0


async def _users_credit(services: Any, number: str, args: argparse.Namespace) -> int:
    from bot import accounts
    from bot.console import credit as operator_credit

    async with services.sessions() as db:
        user = await accounts.find_user(db, number)
        if user is None:
            return _no_user(number, " (enrol it first: users set-mode PHONE guest|child|pro)")
        applied, balance = await operator_credit.credit(db, user, args.amount, args.reason)
        await db.commit()
    if applied == 0:
        print("warning: nothing taken back: the balance is already 0 (it never goes below 0)",
              file=sys.stderr)
    elif applied != args.amount:
        print(f"warning: only {-applied} of the {-args.amount} credits were taken back: a balance never "
              "goes below 0", file=sys.stderr)
    print(f"{number}: {applied:+d} credit{'s' if abs(applied) != 1 else ''}; balance {balance}")
    return 0


async def _users_set_level(services: Any, number: str, args: argparse.Namespace) -> int:
    """The student's class, as CLASSE 4e sets it (and never asked again in the class menu)."""
    from bot import accounts

    async with services.sessions() as db:
        user = await accounts.find_user(db, number)
        if user is None:
            return _no_user(number, " (enrol it first: users set-mode PHONE child)")
        before, user.school_level = user.school_level, parse_level(args.level)
        user.level_asked_at = user.level_asked_at or services.clock()
        await db.commit()
        print(f"{number}: class {user.school_level} (was {before or 'not set'})")
    return 0


async def _users_set_timezone(services: Any, number: str, args: argparse.Namespace) -> int:
    """The user's time zone, as FUSEAU sets it: reminders and digests follow it from now on."""
    from bot import accounts
    from bot.channel.locale import find_zone

    async with services.sessions() as db:
        user = await accounts.find_user(db, number)
        if user is None:
            return _no_user(number)
        before, user.timezone = user.timezone, find_zone(args.zone) or user.timezone  # checked before
        await db.commit()
        print(f"{number}: time zone {user.timezone} (was {before or 'not set'})")
    return 0


async def _users_show(services: Any, number: str, args: argparse.Namespace) -> int:
    import json

    from bot import accounts
    from bot.billing import costs

    async with services.sessions() as db:
        user = await accounts.find_user(db, number)
        if user is None:
            return _no_user(number)
        info = await accounts.describe(db, user)
        # What they cost the operator (bot.billing.costs): the cost meter's week and month.
        lines = await costs.learner_lines(db, services.settings, user.id, services.clock())
    info["costs"] = [line.shown() for line in lines]
    print(json.dumps(info, ensure_ascii=False, indent=2, default=str) if args.json
          else accounts.describe_text(info) + f"\n  cost:        {costs.lines_text(lines)}")
    return 0


async def _users_export(services: Any, number: str, args: argparse.Namespace) -> int:
    import json

    from bot import accounts

    async with services.sessions() as db:
        user = await accounts.find_user(db, number)
        if user is None:
            return _no_user(number)
        document = await accounts.export(db, user, services.clock())
    sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2, default=str) + "\n")
    return 0


async def _users_forget(services: Any, number: str, args: argparse.Namespace) -> int:
    from bot import accounts

    try:
        report = await accounts.forget_number(services, number)
    except accounts.AccountBusy as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not report.anything:
        return _no_user(number, "; nothing kept about it")
    deleted = ", ".join(f"{n} {name}" for name, n in sorted(report.deleted.items()) if n) or "no rows"
    who = f"user {report.user_id}" if report.user_id is not None else "no user, only records of the number"
    print(f"{number}: erased ({who}): {deleted}; {report.files_deleted} stored file(s) deleted; "
          f"{report.spooled} spooled webhook(s) removed")
    redacted = ", ".join(f"{n} {table}" for table, n in sorted(report.redacted.items()) if n)
    if redacted:
        print(f"  number removed from other people's records: {redacted}")
    if report.kept:
        print("  kept for accounting, now on anonymous placeholder user "
              f"{report.placeholder_id}: " + ", ".join(f"{n} {k}" for k, n in report.kept.items())
              + (f"; {report.written_off} unused credits written off" if report.written_off else ""))
    if report.files_left:
        print(f"error: {len(report.files_left)} stored file(s) could not be deleted: "
              + ", ".join(report.files_left), file=sys.stderr)
    if report.spool_error:
        print(f"error: the spool's files (DATA_DIR/spool) could not be cleaned: {report.spool_error}",
              file=sys.stderr)
    return 1 if report.files_left or report.spool_error else 0
