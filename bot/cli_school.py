"""The command line of `cohorts …` and `operators …` (the school's), beside bot/cli.py which builds
the rest: bot.console.school, bot.console.class_items and bot.console.assign run them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_files_parser", "add_items_parser", "school_parsers"]


def add_items_parser(cohorts_sub: argparse._SubParsersAction[Any]) -> None:
    """`cohorts items import NAME FILE` and `cohorts items list NAME`."""
    items = cohorts_sub.add_parser("items", help="a class's own questions: import a file, list them")
    items_sub = items.add_subparsers(dest="items_command", required=True)
    imported = items_sub.add_parser(
        "import", help="add questions (CSV or XLSX): question,choix_1..choix_4,bonne_reponse,explication,"
        "matiere,notion or English names")
    imported.add_argument("name")
    imported.add_argument("file", type=Path)
    listed = items_sub.add_parser("list", help="the class's questions counted per subject and skill")
    listed.add_argument("name")


def add_files_parser(cohorts_sub: argparse._SubParsersAction[Any]) -> None:
    """`cohorts files add NAME FILE` and `cohorts files list NAME`."""
    files = cohorts_sub.add_parser("files", help="a class's library: add a file its students read, list them")
    files_sub = files.add_subparsers(dest="files_command", required=True)
    added = files_sub.add_parser("add", help="add a file (PDF, Word, text, photo…) the class's students "
                                 "can search and read, but not change")
    added.add_argument("name")
    added.add_argument("file", type=Path)
    files_sub.add_parser("list", help="the class's files and who opened each").add_argument("name")


def school_parsers(sub: argparse._SubParsersAction[Any]) -> None:
    """`cohorts …` and `operators …` (bot.console.school runs them)."""
    cohorts_parser = sub.add_parser("cohorts", help="classes: create, list, show, import a class list, fund")
    cohorts_sub = cohorts_parser.add_subparsers(dest="cohorts_command", required=True)
    cohorts_sub.add_parser("create", help="a new class").add_argument("name")
    cohorts_sub.add_parser("list", help="every class, its students and teachers")
    cohorts_sub.add_parser("show", help="a class's roster: level and last activity").add_argument("name")
    funded = cohorts_sub.add_parser("fund", help="put credits in a class's pool, spent by its students first")
    funded.add_argument("name")
    funded.add_argument("credits", help="a whole number of credits")
    imported = cohorts_sub.add_parser(
        "import", help="enrol a class list (CSV or XLSX): phone,name,level,parent_phone or French names")
    imported.add_argument("name")
    imported.add_argument("file", type=Path)
    imported.add_argument("--school", default=None,
                          help="the school's name, as parents' SMS say who linked them")
    add_items_parser(cohorts_sub)
    add_files_parser(cohorts_sub)
    from bot.console.assign import assign_parser
    assign_parser(cohorts_sub)
    operators_parser = sub.add_parser("operators", help="who logs in to the dashboard: admins and teachers")
    operators_sub = operators_parser.add_subparsers(dest="operators_command", required=True)
    add = operators_sub.add_parser("add", help="an admin, or a teacher of one or more classes")
    add.add_argument("email")
    add.add_argument("--role", required=True, choices=("admin", "teacher"))
    add.add_argument("--cohort", action="append", default=[], metavar="NAME",
                     help="a teacher's class (repeat for several)")
    add.add_argument("--password-stdin", action="store_true",
                     help="read the password from stdin (else a random one is printed once)")
    operators_sub.add_parser("list", help="every operator, role and classes")
    operators_sub.add_parser("remove", help="remove an operator (their sessions end)").add_argument("email")
