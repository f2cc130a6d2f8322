"""`python -m bot cohorts assign NAME --skill NOTION [--questions 5] [--due AAAA-MM-JJ]`, and the
assignments' lines of `cohorts show`. A bad request is one line on stderr (exit 2, or 1 for a class
that is not there) and nothing stored; the notices go through the scheduled sends
(bot.school.assignments), so the command never waits on Twilio."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bot.config import Settings
from bot.console.cohort_errors import no_class
from bot.texts import fr_en

__all__ = ["assign_command", "assign_parser", "assignment_lines"]


def assign_parser(cohorts: Any) -> None:
    """`cohorts assign`'s arguments (bot/cli.py builds the rest of the command line)."""
    assigned = cohorts.add_parser("assign", help="homework: N questions on one skill to every student")
    assigned.add_argument("name")
    assigned.add_argument("--skill", required=True, help="the skill (notion), as the students read it")
    assigned.add_argument("--questions", type=int, default=5, help="1 to 20 (default 5)")
    assigned.add_argument("--due", default=None, metavar="AAAA-MM-JJ", help="the day it is due")


async def assign_command(settings: Settings, args: argparse.Namespace) -> int:
    from bot.school import AssignmentError, assign, find_cohort, local_today, parse_due
    from bot.services import build_services

    language, name = settings.default_language, args.name.strip()
    services = await build_services(settings)
    try:
        now = services.clock()
        async with services.sessions() as db:
            cohort = await find_cohort(db, name)
            if cohort is None:
                return no_class(language, name)
            try:
                due = parse_due(args.due, local_today(now, settings.default_timezone), language)
                found = await assign(db, cohort, skill=args.skill, questions=args.questions, due_on=due,
                                     created_by="console", now=now, language=language)
            except AssignmentError as exc:
                print(fr_en(language, f"erreur : {exc}, rien n'a changé", f"error: {exc}, nothing changed"),
                      file=sys.stderr)
                return 2
            count = await _students(db, found.id)
            await db.commit()
    finally:
        await services.close()
    print(fr_en(language, f"devoir {found.id} donné à la classe {name!r} : {count} élève(s) prévenu(s) "
                          "dès que possible",
                f"assignment {found.id} set to class {name!r}: {count} student(s) to be told shortly"))
    return 0


async def _students(db: Any, assignment_id: int) -> int:
    from sqlalchemy import func, select

    from bot.storage.models import AssignmentWork

    return int(await db.scalar(select(func.count()).select_from(AssignmentWork)
                               .where(AssignmentWork.assignment_id == assignment_id)) or 0)


async def assignment_lines(db: Any, cohort_id: int, names: dict[int, str], language: str) -> list[str]:
    """« assignment 3: fractions, 2 questions, due mar. 10 mars — 1/2 finished » and a line per student."""
    from bot.school import class_assignments

    lines = []
    for a in await class_assignments(db, cohort_id, language):
        due = fr_en(language, f", avant le {a.due}", f", due {a.due}") if a.due else ""
        lines.append(fr_en(language, f"devoir {a.id} : {a.skill_label}, {a.questions} question(s){due} — "
                                     f"{a.finished}/{a.students} fini(s)",
                           f"assignment {a.id}: {a.skill_label}, {a.questions} question(s){due} — "
                           f"{a.finished}/{a.students} finished"))
        lines += [f"    {names.get(uid, '-')}  {score}" for uid, score in sorted(a.scores.items())]
    return lines
