"""A teacher's questions: `python -m bot cohorts items import NAME FILE` as the operator runs it, on a
file French Excel writes (Windows-1252, `;`, French headers), a workbook with English headers, a
bad file refused line by line with nothing stored, the same file twice; and the reading rules
(true or false, the answer by number or text, subjects, lengths) on their own."""

from __future__ import annotations

import io
from pathlib import Path

import openpyxl
import pytest
from sqlalchemy import select

from bot.school import ItemsError, read_items
from bot.storage.models import ClassItem, Cohort
from tests.support.console import console
from tests.support.harness import Harness

HEADER = "Question;Choix 1;Choix 2;Choix 3;Choix 4;Bonne réponse;Explication;Matière;Notion\r\n"
FRENCH_EXCEL = (HEADER
                + "Combien font 3 × 4 ?;7;12;34;;2;3 fois 4 font 12.;Maths;La multiplication\r\n"
                + "Un triangle a trois côtés.;Vrai;Faux;;;Vrai;Par définition.;Mathématiques;"
                  "Les triangles\r\n"
                + "La capitale de la Côte d'Ivoire est Abidjan.;Faux;Vrai;;;1;C'est Yamoussoukro.;"
                  "Histoire-Géo;Géographie de la Côte d'Ivoire\r\n"
                + "Quel mot est un verbe ?;maison;manger;;;manger;« manger » est à l'infinitif.;Français;"
                  "Les verbes\r\n")


def excel_file(tmp_path: Path, text: str, name: str = "questions.csv") -> str:
    path = tmp_path / name
    path.write_bytes(text.encode("cp1252"))  # « CSV (séparateur : point-virgule) » of French Excel
    return str(path)


async def add_class(h: Harness, name: str) -> int:
    async with h.services.sessions() as db:
        cohort = Cohort(name=name, created_at=h.clock())
        db.add(cohort)
        await db.commit()
        return cohort.id


async def bank(h: Harness) -> list[ClassItem]:
    async with h.services.sessions() as db:
        return list(await db.scalars(select(ClassItem).order_by(ClassItem.id)))


async def test_a_french_excel_file_is_imported_once(harness: Harness, tmp_path: Path) -> None:
    h = harness
    cohort_id = await add_class(h, "6e A")
    path = excel_file(tmp_path, FRENCH_EXCEL)
    run = await console(h, "cohorts", "items", "import", "6e A", path)
    assert run.code == 0, run.err
    assert "4 question(s) lue(s) ; 4 ajoutée(s), 0 déjà là" in run.out, run.out
    items = await bank(h)
    assert [(i.cohort_id, i.quiz_type, i.options, i.correct_index) for i in items] == [
        (cohort_id, "mcq", ["7", "12", "34"], 1),
        (cohort_id, "tf", ["true", "false"], 0),
        (cohort_id, "tf", ["true", "false"], 1),  # « Faux » first, answer 1: the statement is false
        (cohort_id, "mcq", ["maison", "manger"], 1)]
    assert [(i.subject, i.skill, i.skill_label) for i in items] == [
        ("Mathématiques", "multiplication", "La multiplication"),
        ("Mathématiques", "triangle", "Les triangles"),
        ("Histoire-Géographie", "geographie cote ivoire", "Géographie de la Côte d'Ivoire"),
        ("Français", "verbe", "Les verbes")]
    assert items[0].question == "Combien font 3 × 4 ?"
    assert items[3].explanation == "« manger » est à l'infinitif."
    twice = await console(h, "cohorts", "items", "import", "6e A", path)
    assert twice.code == 0 and "0 ajoutée(s), 4 déjà là" in twice.out, twice.out
    assert [i.id for i in await bank(h)] == [i.id for i in items]
    # One more row, the rest as before: only it is added.
    more = excel_file(tmp_path, FRENCH_EXCEL + "Combien font 2 + 2 ?;3;4;5;;choix 2;;Maths;addition\r\n")
    third = await console(h, "cohorts", "items", "import", "6e A", more)
    assert "1 ajoutée(s), 4 déjà là" in third.out, third.out
    listed = await console(h, "cohorts", "items", "list", "6e A")
    assert listed.code == 0 and "5 question(s)" in listed.out
    assert "Mathématiques / La multiplication: 1" in listed.out and "Français / Les verbes: 1" in listed.out


async def test_a_bad_file_names_each_line_and_stores_nothing(harness: Harness, tmp_path: Path) -> None:
    h = harness
    await add_class(h, "CM2 B")
    bad = (FRENCH_EXCEL
           + ";a;b;;;1;;Maths;x\r\n"                      # 6: no question
           + "Q ?;a;;;;1;;Maths;x\r\n"                    # 7: one choice
           + "Q ?;a;b;;;3;;Maths;x\r\n"                   # 8: number out of range
           + "Q ?;a;b;;;c;;Maths;x\r\n"                   # 9: not a choice
           + "Q ?;a;b;;;1;;Cuisine;x\r\n"                 # 10: unknown subject
           + "Q ?;3;4;5;6;4;;Maths;x\r\n"                 # 11: « 4 » is choice 4 and choice 2's text
           + f"{'Q' * 1001};a;b;;;1;;Maths;x\r\n"         # 12: too long
           + "Q ?;a;;c;;1;;Maths;x\r\n")                  # 13: a gap between the choices
    run = await console(h, "cohorts", "items", "import", "CM2 B", excel_file(tmp_path, bad))
    assert run.code == 2 and "rien n'a changé" in run.err, run.err
    for expected in ("ligne 6: la question est vide", "ligne 7: il faut au moins 2 choix",
                     "ligne 8: la bonne réponse 3 n'est pas un numéro de choix (1 à 2)",
                     "ligne 9: la bonne réponse « c » n'est aucun des choix",
                     "ligne 10: « Cuisine » n'est pas une matière ; au choix : Mathématiques",
                     "ligne 11: la bonne réponse 4 est à la fois le choix 4 et le texte du choix 2",
                     "ligne 12: la question dépasse 1000 caractères",
                     "ligne 13: le choix 2 est vide alors que le choix 3 est rempli"):
        assert expected in run.err, (expected, run.err)
    assert "ligne 2" not in run.err and "ligne 5" not in run.err
    assert await bank(h) == []
    unknown = await console(h, "cohorts", "items", "import", "Nowhere", excel_file(tmp_path, FRENCH_EXCEL))
    assert unknown.code == 1 and "aucune classe nommée 'Nowhere'" in unknown.err, unknown.err
    assert await bank(h) == []


async def test_an_english_workbook(harness: Harness, tmp_path: Path) -> None:
    h = harness
    await add_class(h, "Form 1")
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["question", "option_1", "option_2", "option_3", "option_4", "answer", "explanation",
                  "subject", "skill"])
    sheet.append(["What is 7 × 8?", 54, 56, 58, None, 56, "7 × 8 = 56", "Maths", "Multiplication"])
    sheet.append(["The Earth is flat.", "True", "False", None, None, "False", "", "SVT", "La Terre"])
    path = tmp_path / "items.xlsx"
    workbook.save(path)
    run = await console(h, "cohorts", "items", "import", "Form 1", str(path))
    assert run.code == 0, run.err
    items = await bank(h)
    assert [(i.quiz_type, i.options, i.correct_index) for i in items] == [
        ("mcq", ["54", "56", "58"], 1), ("tf", ["true", "false"], 1)]


def test_the_reading_rules() -> None:
    rows = read_items(FRENCH_EXCEL.encode("utf-8-sig").replace(b";", b","), "q.csv")
    assert [r.line for r in rows] == [2, 3, 4, 5]
    assert len({r.fingerprint for r in rows}) == 4
    # Case and spaces do not make another question; another right answer does.
    same = "question,option_1,option_2,answer,subject,skill\nCombien  font 3 × 4 ?,7,12,2,Maths,x\n"
    other = "question,option_1,option_2,answer,subject,skill\nCombien font 3 × 4 ?,7,12,1,Maths,x\n"
    base = "question,option_1,option_2,answer,subject,skill\ncombien font 3 × 4 ?,7,12,2,maths,y\n"
    [a], [b], [c] = (read_items(text.encode(), "q.csv") for text in (same, other, base))
    assert a.fingerprint == c.fingerprint != b.fingerprint
    # « Autre » is a subject when written; English messages for an English operator.
    [autre] = read_items(b"question,option_1,option_2,answer,subject,skill\nQ?,a,b,b,Autre,x\n", "q.csv")
    assert (autre.subject, autre.correct_index) == ("Autre", 1)
    with pytest.raises(ItemsError) as missing:
        read_items(b"question,option_1,answer,subject,skill\nQ?,a,1,Maths,x\n", "q.csv", "en")
    assert "required column missing: choice_2" in str(missing.value)
    with pytest.raises(ItemsError) as unknown:
        read_items(b"question,option_1,option_2,answer,subject,skill,level\nQ?,a,b,1,Maths,x,6e\n",
                   "q.csv", "en")
    assert "unknown column « level »" in str(unknown.value)
    with pytest.raises(ItemsError) as empty:
        read_items(b"question,option_1,option_2,answer,subject,skill\n", "q.csv", "en")
    assert "line 2: the file has no question rows" in str(empty.value)
    with pytest.raises(ItemsError) as huge:
        read_items(b"x" * (1024 * 1024 + 1), "q.csv", "en")
    assert "over 1024 KB" in str(huge.value)
    with pytest.raises(ItemsError) as twice:
        read_items(b"question,option_1,option_2,answer,subject,skill\nQ?,a,A,1,Maths,x\n", "q.csv", "en")
    assert "line 2: two choices are the same" in str(twice.value)
    long_texts = ("question,option_1,option_2,answer,explanation,subject,skill\n"
                  f"Q?,{'a' * 201},b,b,{'e' * 1501},Maths,{'s' * 201}\n").encode()
    with pytest.raises(ItemsError) as long:
        read_items(long_texts, "q.csv", "en")
    assert str(long.value).splitlines() == [
        "line 2: the explanation is longer than 1500 characters",
        "line 2: the skill is longer than 200 characters",
        "line 2: a choice is longer than 200 characters"]


def test_a_damaged_workbook_is_refused() -> None:
    buffer = io.BytesIO(b"PK\x03\x04 not really a workbook")
    with pytest.raises(ItemsError) as damaged:
        read_items(buffer.getvalue(), "q.xlsx", "fr")
    assert "le classeur ne peut pas être ouvert" in str(damaged.value)
