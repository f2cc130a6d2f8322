"""The command line of `cohorts items …` (a class's own questions), beside bot/cli.py which builds
the rest: bot.console.class_items runs them. Only argparse here, so parsing loads nothing more."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_items_parser"]


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
