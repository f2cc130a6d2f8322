"""A class list read and checked whole, before anything is written (bot.school)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.learning import LEVELS
from bot.school import RosterError, import_level, read_roster

HEADER = "phone,name,level,parent_phone\n"


def problems(data: bytes) -> list[str]:
    with pytest.raises(RosterError) as caught:
        read_roster(data, "CI", "en")
    return caught.value.problems


def test_a_good_file_with_a_bom_semicolons_and_the_forms_people_type() -> None:
    data = ("\ufeffphone;name;level;parent_phone\r\n"
            "+225 07 01 02 03 04;Awa Koné;Terminale D;07 09 08 07 06\r\n"
            "2250701020305;;6ème;\r\n"  # a spreadsheet took the + away
            "\r\n"
            "0701020306;Yao;cm 2\r\n").encode()
    rows = read_roster(data, "CI")
    assert [(r.line, r.phone, r.name, r.level, r.parent_phone) for r in rows] == [
        (2, "+2250701020304", "Awa Koné", "Tle", "+2250709080706"),
        (3, "+2250701020305", None, "6e", None),
        (5, "+2250701020306", "Yao", "CM2", None),
    ]


def test_levels_with_a_section_are_read_and_unknown_ones_are_not() -> None:
    typed = ("CM2", "6e 3", "6e3", "Tle C", "Terminale série D", "1ère A2", "2nde", "Université")
    assert [import_level(t) for t in typed] == ["CM2", "6e", "6e", "Tle", "Tle", "1re", "2nde", "Université"]
    assert import_level("Master 2") is None and import_level("CM7") is None


def test_every_bad_row_is_reported_with_its_line_number() -> None:
    data = (HEADER
            + "+2250701020304,Awa,CM2,\n"
            + "+22507,Bad,CM2,\n"                       # line 3: not a number
            + "+2250701020305,Yao,CM9,\n"                # line 4: unknown level
            + "+225 07 01 02 03 04,Awa again,,\n"        # line 5: duplicate of line 2
            + "+2250701020306,Ali,,+2250701020306\n"     # line 6: own number as parent
            + "+2250701020307,Ama,,+2250701020309\n"     # line 7: fine
            + "+2250701020308,Kofi,,+2250701020304\n"    # line 8: parent is the student of line 2
            + "2.25070102E+12,Zoe,,\n"                   # line 9: turned into a number
            + "+2250701020309,a,b,c,d\n").encode()       # line 10: too many fields
    found = problems(data)
    assert [p.split(":")[0] for p in found] == [f"line {n}" for n in (3, 4, 5, 6, 8, 9, 10)], found
    assert "'CM9' is not a class" in found[1] and "already on line 2" in found[2]
    assert "student's own number" in found[3] and "the student of line 2" in found[4]
    assert "format the column as text" in found[5]


@pytest.mark.parametrize(("data", "said"), [
    (b"telephone,nom,classe,parent\n+2250701020304,,,\n", "line 1: unknown column « parent »"),
    (b"phone,name,phone\n+2250701020304,,\n", "line 1: the column « phone » is repeated"),
    (b"name,level\nAwa,CM2\n", "line 1: required column missing: phone"),
    (HEADER.encode() + "+2250701020304,Koné,,\n".encode() + b"+2250701020305,Ko\xe9,,\n",
     "line 3: the text cannot be read"),
    (HEADER.encode() + b"+2250701020304,Ko\x81,,\n", "line 2: an unreadable character"),
    (HEADER.encode() + b"+2250701020304,Ko\x07,,\n", "line 2: a control character"),
    (HEADER.encode(), "no student rows"),
    (b"", "line 1: the file is empty"),
    (b"PK\x03\x04 not a workbook", "the workbook cannot be opened"),
    (HEADER.encode() + b'+2250701020304,"Awa\n', "the CSV cannot be read"),
])
def test_a_file_that_cannot_be_read_says_why(data: bytes, said: str) -> None:
    assert said in "\n".join(problems(data))


def test_without_a_default_region_a_number_needs_its_country_code() -> None:
    with pytest.raises(RosterError) as caught:
        read_roster((HEADER + "0701020304,,,\n").encode(), None, "en")
    assert "line 2" in str(caught.value)
    [row] = read_roster((HEADER + "+2250701020304,,,07 09 08 07 06\n").encode(), None, "en")
    assert row.parent_phone == "+2250709080706"  # a parent's number is read in the student's country


def test_french_excel_s_own_export_is_read() -> None:
    """« CSV (séparateur : point-virgule) » from French Excel: Windows-1252, `;`, French headers."""
    data = ("Téléphone;Nom et prénoms;Classe;Téléphone parent\r\n"
            "07 01 02 03 04;Awa Koné;Terminale D;07 09 08 07 06\r\n"
            "07 01 02 03 05;Aïcha Traoré;6ème 3;\r\n").encode("cp1252")
    rows = read_roster(data, "CI")
    assert [(r.phone, r.name, r.level, r.parent_phone) for r in rows] == [
        ("+2250701020304", "Awa Koné", "Tle", "+2250709080706"),
        ("+2250701020305", "Aïcha Traoré", "6e", None),
    ]


def test_a_workbook_is_read_with_numbers_as_a_person_typed_them(tmp_path: Path) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["TÉLÉPHONE", "Nom", "Niveau"])
    sheet.append([2250701020304, "Awa Koné", "Tle C"])  # a number cell: the + is gone, no « .0 »
    sheet.append([None, None, None])
    sheet.append(["+225 07 01 02 03 05", "Yao", "CM2"])
    path = tmp_path / "classe.xlsx"
    book.save(path)
    rows = read_roster(path.read_bytes(), "CI", filename="classe.xlsx")
    assert [(r.line, r.phone, r.name, r.level) for r in rows] == [
        (2, "+2250701020304", "Awa Koné", "Tle"), (4, "+2250701020305", "Yao", "CM2")]


def test_problems_are_said_in_the_operator_s_language() -> None:
    data = (HEADER + "+22507,Bad,CM9,\n").encode()
    with pytest.raises(RosterError) as caught:
        read_roster(data, "CI", "fr")
    assert caught.value.problems == [
        "ligne 2: le téléphone '+22507' n'est pas un numéro valide (écrivez-le avec l'indicatif, "
        "ex. +2250701020304)",
        "ligne 2: 'CM9' n'est pas une classe ; au choix : " + ", ".join(LEVELS),
    ]
