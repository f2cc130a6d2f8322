"""`python -m bot cohorts files add NAME FILE` and `cohorts files list NAME`: a file added to a class's
library (stored and indexed once, read by the class's current students: bot.school.class_files),
and the class's files with who opened each. As every `cohorts` command: a file that cannot be read
or is too large is exit 2 with nothing changed, a class that is not there exit 1; said in the
operator's language (DEFAULT_LANGUAGE)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bot.config import Settings
from bot.console.cohort_errors import no_class
from bot.formats import when
from bot.texts import fr_en

__all__ = ["files_command"]


def _refused(language: str, fr: str, en: str) -> int:
    print(fr_en(language, f"erreur : {fr}, rien n'a changé", f"error: {en}, nothing changed"),
          file=sys.stderr)
    return 2


async def files_command(settings: Settings, args: argparse.Namespace, name: str) -> int:
    from bot.school import MAX_CLASS_FILE_BYTES, class_files, find_cohort
    from bot.services import build_services

    language = settings.default_language
    data = b""
    if args.files_command == "add":
        try:
            data = args.file.read_bytes()
        except OSError as exc:
            why = exc.strerror or str(exc)
            return _refused(language, f"{args.file} ne peut pas être lu : {why}",
                            f"cannot read {args.file}: {why}")
        if not data or len(data) > MAX_CLASS_FILE_BYTES:
            limit = MAX_CLASS_FILE_BYTES // (1024 * 1024)
            return _refused(language, f"{args.file} est vide ou dépasse {limit} Mo",
                            f"{args.file} is empty or larger than {limit} MB")
    services = await build_services(settings)
    try:
        async with services.sessions() as db:
            cohort = await find_cohort(db, name)
            files = await class_files(db, cohort.id) if cohort is not None else []
        if cohort is None:
            return no_class(language, name)
        if args.files_command == "add":
            return await _add(services, cohort, args.file.name, data, language)
        _list(files, name, services.settings.default_timezone, language)
        return 0
    finally:
        await services.close()


async def _add(services: Any, cohort: Any, filename: str, data: bytes, language: str) -> int:
    from bot.school import add_class_file

    name = cohort.name
    row = await add_class_file(services, cohort, filename, data)
    words = len((row.text or "").split())
    print(fr_en(language, f"classe {name!r} : fichier {row.name!r} ajouté (n° {row.id}, {words} mot(s) "
                          "lu(s)) ; ses élèves le voient dans leurs fichiers",
                f"class {name!r}: file {row.name!r} added (no. {row.id}, {words} word(s) read); "
                "its students see it among their files"))
    return 0


def _list(files: list[Any], name: str, zone: str, language: str) -> None:
    print(fr_en(language, f"classe {name!r} : {len(files)} fichier(s)",
                f"class {name!r}: {len(files)} file(s)"))
    if not files:
        print(fr_en(language, "  aucun fichier (cohorts files add NOM FICHIER)",
                    "  no file yet (cohorts files add NAME FILE)"))
    for file in files:
        print(f"  {file.id}  {file.name}  {when(file.created_at, language, zone)}")
        opened = (", ".join(f"{o.name} ×{o.count}" for o in file.opened_by)
                  or fr_en(language, "personne", "nobody"))
        print(fr_en(language, f"    ouvert par : {opened}", f"    opened by: {opened}"))
