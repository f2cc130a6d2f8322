"""`python -m bot cohorts items import NAME FILE` and `cohorts items list NAME`: a teacher's questions
added to a class's bank, and the bank counted per subject and skill. As every `cohorts` command
(bot.console.school): the whole file is checked before the database is touched (exit 2, nothing
changed), a class that is not there is exit 1; said in the operator's language (DEFAULT_LANGUAGE).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bot.config import Settings
from bot.console.cohort_errors import no_class
from bot.texts import fr_en

__all__ = ["items_command"]


async def items_command(settings: Settings, args: argparse.Namespace, name: str) -> int:
    from bot.school import ItemsError, read_items
    from bot.services import build_services

    language = settings.default_language
    rows = None
    if args.items_command == "import":
        try:
            data = args.file.read_bytes()
        except OSError as exc:
            print(fr_en(language, f"erreur : {args.file} ne peut pas être lu : {exc.strerror or exc}",
                        f"error: cannot read {args.file}: {exc.strerror or exc}"), file=sys.stderr)
            return 2
        try:
            rows = read_items(data, args.file.name, language)
        except ItemsError as exc:
            said = fr_en(language, f"erreur : {args.file} n'a pas été importé, rien n'a changé :",
                         f"error: {args.file} was not imported, nothing changed:")
            print(f"{said}\n{exc}", file=sys.stderr)
            return 2
    services = await build_services(settings)
    try:
        if rows is None:
            return await _list(services, name, language)
        return await _import(services, name, rows, language)
    finally:
        await services.close()


async def _import(services: Any, name: str, rows: list[Any], language: str) -> int:
    from sqlalchemy.exc import IntegrityError

    from bot.school import add_items, find_cohort

    for attempt in range(2):
        try:
            async with services.sessions() as db:
                cohort = await find_cohort(db, name)
                if cohort is None:
                    return no_class(language, name)
                added, already = await add_items(db, cohort.id, rows, services.clock())
                await db.commit()
            break
        except IntegrityError:
            if attempt:  # the same file imported twice at that very moment: the second sees the first
                raise
    print(fr_en(language, f"classe {name!r} : {len(rows)} question(s) lue(s) ; {added} ajoutée(s), "
                f"{already} déjà là",
                f"class {name!r}: {len(rows)} question(s) read; {added} added, {already} already there"))
    return 0


async def _list(services: Any, name: str, language: str) -> int:
    from bot.school import bank_counts, find_cohort

    async with services.sessions() as db:
        cohort = await find_cohort(db, name)
        if cohort is None:
            return no_class(language, name)
        counts = await bank_counts(db, cohort.id)
    total = sum(count for _subject, _label, count in counts)
    print(fr_en(language, f"classe {name!r} : {total} question(s)", f"class {name!r}: {total} question(s)"))
    if not counts:
        print(fr_en(language, "  aucune question (cohorts items import NOM FICHIER)",
                    "  no question yet (cohorts items import NAME FILE)"))
    for subject, label, count in counts:
        print(f"  {subject} / {label}: {count}")
    return 0
