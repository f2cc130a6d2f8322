"""A class list as a school keeps it: the CSV or XLSX file of `cohorts import NAME FILE`, read and
checked whole before anything is written.

The columns are `phone,name,level,parent_phone`, or their French names as a school writes them
(« Téléphone », « Nom et prénoms », « Classe », « Téléphone parent »…: `COLUMNS`); only the phone is
required. The file is read by bot.school.sheets (`;` or `,`, UTF-8 with or without a byte-order mark,
Windows-1252, or a workbook). Every bad row is reported with its line number, in the operator's
language:
- a number is read with `phonenumbers`: with its country code (+225…, 00225…), or without it as a
  number of the default region (the country of DEFAULT_TIMEZONE); a parent's number without its
  country code is read in the student's country. A number a spreadsheet stripped of its `+`
  (2250701020304) is read with it put back;
- a level is read by bot.learning's one parser (`parse_class`: « CM2 », « 6ème 3 », « Terminale D »,
  « Tle C »);
- a student's number appears once in the file, is not their parent's, and no student's number is
  another row's parent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import phonenumbers

from bot.channel import locale
from bot.channel.inbound import clean_text
from bot.learning import LEVELS, parse_level
from bot.school.sheets import SheetError, in_line_order, line_label, read_table, too_many_rows
from bot.texts import fr_en

__all__ = ["COLUMNS", "HEADER", "MAX_ROWS", "NAME_MAX", "RosterError", "RosterRow", "import_level",
           "read_roster", "region_of_zone"]

HEADER = ("phone", "name", "level", "parent_phone")
# Every header a school writes for each column, folded when compared (bot.school.sheets).
COLUMNS = {
    "phone": "phone", "téléphone": "phone", "tel": "phone", "numéro": "phone", "numéro de téléphone": "phone",
    "contact": "phone", "portable": "phone", "téléphone élève": "phone", "whatsapp": "phone",
    "name": "name", "nom": "name", "nom et prénoms": "name", "nom et prénom": "name", "nom prénoms": "name",
    "prénom et nom": "name", "nom complet": "name", "élève": "name",
    "level": "level", "classe": "level", "niveau": "level",
    "parent_phone": "parent_phone", "téléphone parent": "parent_phone", "téléphone du parent": "parent_phone",
    "tel parent": "parent_phone", "contact parent": "parent_phone", "numéro parent": "parent_phone",
    "téléphone des parents": "parent_phone",
}
MAX_ROWS = 5000  # one transaction; a whole school is a few files
NAME_MAX = 100


@dataclass(frozen=True)
class RosterRow:
    line: int  # in the file, 1 = the header
    phone: str  # E.164
    name: str | None
    level: str | None  # canonical (LEVELS)
    parent_phone: str | None  # E.164


class RosterError(SheetError):
    """The file cannot be imported; `problems` are « line N: what is wrong », in file order."""


def region_of_zone(zone: str) -> str | None:
    """The country whose numbers may be written without their code: the one of DEFAULT_TIMEZONE
    among the French-speaking countries served (bot.channel.locale), else None (codes required)."""
    return locale.region_of_zone(zone)


def import_level(text: str) -> str | None:
    """The canonical level of a class list's cell, a section after it dropped; None if unknown."""
    return parse_level(text)


def _phone(raw: str, region: str | None) -> str | None:
    """E.164, or None when `raw` is not a valid number."""
    raw = raw.strip()
    candidates = [raw]
    if raw.isdigit() and len(raw) >= 11:
        candidates.append("+" + raw)  # a spreadsheet took the + away
    for candidate in candidates:
        try:
            number = phonenumbers.parse(candidate, None if candidate.startswith("+") else region)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
    return None


def _phone_problem(raw: str, what: str, language: str | None) -> str:
    if re.fullmatch(r"\d(?:[.,]\d+)?[eE]\+?\d+", raw.strip()):
        return fr_en(language,
                     f"{what} {raw!r} a été changé en nombre par le tableur : mettez la colonne au format "
                     "texte et écrivez le numéro en entier",
                     f"{what} {raw!r} was turned into a number by the spreadsheet: format the column as "
                     "text and write the number in full")
    return fr_en(language,
                 f"{what} {raw!r} n'est pas un numéro valide (écrivez-le avec l'indicatif, "
                 "ex. +2250701020304)",
                 f"{what} {raw!r} is not a valid phone number (write it with its country code, "
                 "e.g. +2250701020304)")


def _region_of(phone: str) -> str | None:
    return phonenumbers.region_code_for_number(phonenumbers.parse(phone, None)) or None


def _row(line: int, cells: dict[str, str], region: str | None, language: str | None,
         problems: list[str]) -> RosterRow | None:
    def problem(fr: str, en: str) -> None:
        problems.append(f"{line_label(language, line)}: {fr_en(language, fr, en)}")

    raw_phone, raw_name, raw_level, raw_parent = (cells.get(name, "") for name in HEADER)
    bad = len(problems)
    phone = _phone(raw_phone, region) if raw_phone else None
    if not raw_phone:
        problem("le téléphone est vide", "the phone is empty")
    elif phone is None:
        problem(_phone_problem(raw_phone, "le téléphone", "fr"), _phone_problem(raw_phone, "the phone", "en"))
    name = " ".join(clean_text(raw_name).split()) or None
    if name is not None and len(name) > NAME_MAX:
        problem(f"le nom dépasse {NAME_MAX} caractères", f"the name is longer than {NAME_MAX} characters")
    level = parse_level(raw_level) if raw_level else None
    if raw_level and level is None:
        problem(f"{raw_level!r} n'est pas une classe ; au choix : {', '.join(LEVELS)}",
                f"{raw_level!r} is not a class; one of: {', '.join(LEVELS)}")
    parent = None
    if raw_parent:
        parent = _phone(raw_parent, _region_of(phone) if phone else region)
        if parent is None:
            problem(_phone_problem(raw_parent, "le téléphone du parent", "fr"),
                    _phone_problem(raw_parent, "the parent_phone", "en"))
        elif parent == phone:
            problem("le téléphone du parent est celui de l'élève",
                    "the parent_phone is the student's own number")
    if len(problems) > bad or phone is None:
        return None
    return RosterRow(line=line, phone=phone, name=name, level=level, parent_phone=parent)


def _cross_checks(rows: list[RosterRow], language: str | None, problems: list[str]) -> None:
    """A student once in the file; a student's number is nobody's parent in it."""
    first_line: dict[str, int] = {}
    for row in rows:
        if row.phone in first_line:
            problems.append(f"{line_label(language, row.line)}: " + fr_en(
                language, f"{row.phone} est déjà à la ligne {first_line[row.phone]}",
                f"{row.phone} is already on line {first_line[row.phone]}"))
        else:
            first_line[row.phone] = row.line
    for row in rows:
        if row.parent_phone in first_line:
            problems.append(f"{line_label(language, row.line)}: " + fr_en(
                language, f"le téléphone du parent {row.parent_phone} est l'élève de la ligne "
                f"{first_line[row.parent_phone]}",
                f"the parent_phone {row.parent_phone} is the student of line {first_line[row.parent_phone]}"))


def read_roster(data: bytes, region: str | None, language: str | None = "fr",
                filename: str = "classe.csv") -> list[RosterRow]:
    """The rows of a class list (CSV or XLSX), every one checked; RosterError lists each bad row by
    line number, in `language`. Blank lines are skipped."""
    try:
        table = read_table(data, filename, COLUMNS, ("phone",), language)
    except SheetError as exc:
        raise RosterError(exc.problems, language) from None
    if too_many := too_many_rows(table, MAX_ROWS, language, "élèves", "students"):
        raise RosterError([too_many], language)
    problems = list(table.problems)
    rows = [row for line, cells in table.rows if (row := _row(line, cells, region, language, problems))]
    if not table.rows and not problems:
        problems.append(f"{line_label(language, 2)}: " + fr_en(language, "le fichier n'a aucun élève",
                                                               "the file has no student rows"))
    _cross_checks(rows, language, problems)
    if problems:
        raise RosterError(in_line_order(problems), language)
    return rows
