"""`python -m bot cohorts …` run as the operator runs it (a process on the test database): a class
list enrols, sets levels, fills the class and links parents, all or nothing, and once."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bot.school import find_cohort, roster
from bot.storage.models import Base, Cohort, CohortMember, CreditEntry, ParentLink, User
from tests.support.console import console
from tests.support.harness import Harness

LIST = ("\ufeffphone,name,level,parent_phone\n"
        "+2250701020304,Awa Koné,Terminale D,+2250709080706\n"
        "0701020305,Yao Koné,6e 3,07 09 08 07 06\n"   # Awa's brother: the same parent
        "+2250701020306,,CM2,\n")


async def snapshot(h: Harness) -> dict[str, list[tuple[Any, ...]]]:
    rows: dict[str, list[tuple[Any, ...]]] = {}
    async with h.services.sessions() as db:
        for table in Base.metadata.sorted_tables:
            result = await db.execute(select(table).order_by(*table.primary_key.columns))
            rows[table.name] = [tuple(r) for r in result]
    return rows


async def add_cohort(h: Harness, name: str) -> None:
    async with h.services.sessions() as db:
        db.add(Cohort(name=name, created_at=h.clock()))
        await db.commit()


def csv_file(tmp_path: Path, text: str, name: str = "class.csv") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


async def test_import_enrols_fills_the_class_and_texts_each_parent_once(harness: Harness,
                                                                        tmp_path: Path) -> None:
    h = harness
    assert (await console(h, "cohorts", "create", "6e A")).code == 0
    again = await console(h, "cohorts", "create", "6e A")
    assert again.code == 1 and again.err == "erreur : la classe '6e A' existe déjà\n"
    run = await console(h, "cohorts", "import", "6e A", csv_file(tmp_path, LIST), "--school", "Lycée Moderne")
    assert run.code == 0, run.err
    # In the operator's language (DEFAULT_LANGUAGE, French by default).
    assert run.out.startswith("classe '6e A' : 3 ligne(s) ; 3 nouveau(x) numéro(s), "), run.out
    assert "3 ajouté(s) à la classe" in run.out and "SMS aux parents : 1 envoyé(s)" in run.out, run.out
    async with h.services.sessions() as db:
        students = {u.phone: u for u in await db.scalars(select(User).where(User.role == "student"))}
        parent = await db.scalar(select(User).where(User.phone == "+2250709080706"))
        links = list(await db.scalars(select(ParentLink)))
        members = list(await db.scalars(select(CohortMember)))
        ledger = [(e.user_id, e.reason, e.delta) for e in await db.scalars(select(CreditEntry))]
    assert {p: (u.mode, u.display_name, u.school_level) for p, u in students.items()} == {
        "+2250701020304": ("child", "Awa Koné", "Tle"), "+2250701020305": ("child", "Yao Koné", "6e"),
        "+2250701020306": ("child", None, "CM2")}
    assert {m.user_id for m in members} == {u.id for u in students.values()}
    assert parent is not None and (parent.role, parent.mode) == ("parent", "child")
    assert sorted((link.student_id, link.status) for link in links) == sorted(
        (students[p].id, "confirmed") for p in ("+2250701020304", "+2250701020305"))
    assert all(link.invited_at is not None and link.code is None for link in links)
    signup = h.settings.signup_credits
    assert sorted(ledger) == sorted([(u.id, "signup", signup) for u in [*students.values(), parent]])
    [sms] = await h.texts_to("+2250709080706")  # one SMS for both children
    assert "Lycée Moderne (classe 6e A)" in sms and "Awa Koné et Yao Koné" in sms and "STOP" in sms, sms
    # The same file again: nothing at all changes, no SMS, no credits. (The SMS's status callbacks
    # come after it, as Twilio's do: the snapshot is taken once they have.)
    await h.twilio.idle()
    before = await snapshot(h)
    twice = await console(h, "cohorts", "import", "6e A", csv_file(tmp_path, LIST))
    assert twice.code == 0 and twice.out == (
        "classe '6e A' : 3 ligne(s) ; rien n'a changé (chaque élève déjà inscrit, dans la classe, nommé et "
        "relié)\n"), twice.out + twice.err
    assert await snapshot(h) == before
    assert len(await h.texts_to("+2250709080706")) == 1
    shown = await console(h, "cohorts", "show", "6e A")
    assert shown.code == 0 and "3 élève(s), 0 actif(s) ces 7 derniers jours" in shown.out, shown.out
    assert "Awa Koné  classe Tle  dernier message n'a jamais écrit" in shown.out, shown.out
    listed = await console(h, "cohorts", "list")
    assert "6e A : 3 élève(s) ; enseignants : aucun" in listed.out


async def test_an_english_speaking_operator_reads_english(
        make_harness: Callable[..., Awaitable[Harness]], tmp_path: Path) -> None:
    h = await make_harness(DEFAULT_LANGUAGE="en")
    created = await console(h, "cohorts", "create", "6e A")
    assert (created.code, created.out) == (0, "class '6e A' created\n"), created.err
    again = await console(h, "cohorts", "create", "6e A")
    assert (again.code, again.err) == (1, "error: a class named '6e A' already exists\n")
    long = await console(h, "cohorts", "create", "x" * 101)
    assert (long.code, long.err) == (2, "error: a class name is 1 to 100 characters, got 101\n")
    run = await console(h, "cohorts", "import", "6e A", csv_file(tmp_path, LIST))
    assert run.out.startswith("class '6e A': 3 row(s); 3 new number(s), 3 enrolled as student(s), "), run.out
    assert "parents' SMS: 1 sent" in run.out, run.out
    bad_list = csv_file(tmp_path, LIST + "+2250701020307,Ali,CM9,\n")
    bad = await console(h, "cohorts", "import", "6e A", bad_list)
    assert bad.code == 2 and "error: " in bad.err and "nothing changed" in bad.err, bad.err
    assert "line 5: " in bad.err and "ligne" not in bad.err, bad.err
    unknown = await console(h, "cohorts", "show", "Nowhere")
    assert (unknown.code, unknown.err) == (1, "error: no class named 'Nowhere' (cohorts list shows them)\n")
    shown = await console(h, "cohorts", "show", "6e A")
    assert "class '6e A': 3 student(s), 0 active in the last 7 days" in shown.out, shown.out
    assert "Awa Koné  class Tle  last message never wrote" in shown.out, shown.out
    listed = await console(h, "cohorts", "list")
    assert listed.out == "6e A: 3 student(s); teachers: none\n"


async def test_show_dates_the_last_message_in_the_schools_zone(
        make_harness: Callable[..., Awaitable[Harness]]) -> None:
    h = await make_harness(DEFAULT_TIMEZONE="Africa/Douala")
    await add_cohort(h, "Tle D")
    awa = await h.make_user("+2250701020304", display_name="Awa", school_level="Tle",
                            last_inbound_at=datetime(2026, 3, 10, 4, 0, tzinfo=UTC))
    async with h.services.sessions() as db:
        cohort = await find_cohort(db, "Tle D")
        assert cohort is not None
        db.add(CohortMember(cohort_id=cohort.id, user_id=awa.id, joined_at=h.clock()))
        await db.commit()
    shown = await console(h, "cohorts", "show", "Tle D")
    assert "+2250701020304  Awa  classe Tle  dernier message mar. 10 mars 2026, 05:00" in shown.out, shown.out


async def test_a_bad_file_changes_nothing_and_names_each_line(harness: Harness, tmp_path: Path) -> None:
    h = harness
    await add_cohort(h, "CM2 B")
    bad = LIST + "+22507,Bad,CM2,\n" + "+2250701020307,Ali,CM9,\n" + "+2250701020304,Awa,,\n"
    before = await snapshot(h)
    run = await console(h, "cohorts", "import", "CM2 B", csv_file(tmp_path, bad))
    # In the operator's language (DEFAULT_LANGUAGE, French by default).
    assert run.code == 2 and "rien n'a changé" in run.err, run.err
    assert "ligne 5:" in run.err and "ligne 6: 'CM9' n'est pas une classe" in run.err
    assert "ligne 7: +2250701020304 est déjà à la ligne 2" in run.err
    unknown = await console(h, "cohorts", "import", "Nowhere", csv_file(tmp_path, LIST))
    assert unknown.code == 1 and unknown.err == (
        "erreur : aucune classe nommée 'Nowhere' (cohorts create 'Nowhere' d'abord)\n")
    assert await snapshot(h) == before and h.twilio.to("+2250709080706") == []


async def test_a_pending_request_is_confirmed_a_refusal_is_not_forced(harness: Harness,
                                                                      tmp_path: Path) -> None:
    h = harness
    student = await h.make_user("+2250701020304")
    refused_student = await h.make_user("+2250701020305")
    parent = await h.make_user("+2250709080706", mode="guest", last_channel="sms")
    async with h.services.sessions() as db:
        db.add(ParentLink(student_id=student.id, parent_id=parent.id, status="pending", code="4821",
                          created_at=h.clock()))
        db.add(ParentLink(student_id=refused_student.id, parent_id=parent.id, status="refused",
                          created_at=h.clock()))
        await db.commit()
    await add_cohort(h, "Tle D")
    h.twilio.fail_next("400")  # the parent's SMS is refused: never said to be sent
    run = await console(h, "cohorts", "import", "Tle D", csv_file(tmp_path, LIST))
    assert run.code == 0, run.err
    assert "1 lien(s) parent confirmé(s)" in run.out, run.out
    assert "SMS aux parents : 0 envoyé(s), 1 non envoyé(s)" in run.out, run.out
    assert ("attention : ligne 3: +2250709080706 a refusé le suivi de +2250701020305 : pas relié de nouveau"
            in run.err), run.err
    assert "attention : le SMS au parent +2250709080706 n'est pas parti" in run.err, run.err
    async with h.services.sessions() as db:
        links = {link.student_id: link for link in await db.scalars(select(ParentLink))}
    assert (links[student.id].status, links[student.id].code, links[student.id].invited_at) == (
        "confirmed", None, None)
    assert links[refused_student.id].status == "refused"


async def test_three_hundred_students_in_one_go(harness: Harness, tmp_path: Path) -> None:
    h = harness
    rows = "".join(f"+22507010{n:05d},Élève {n},4e,\n" for n in range(300))
    await add_cohort(h, "4e")
    path = csv_file(tmp_path, "phone,name,level,parent_phone\n" + rows)
    run = await console(h, "cohorts", "import", "4e", path)
    assert run.code == 0 and "300 ajouté(s) à la classe" in run.out, run.out + run.err
    async with h.services.sessions() as db:
        members = list(await db.scalars(select(CohortMember)))
        signups = list(await db.scalars(select(CreditEntry).where(CreditEntry.reason == "signup")))
    assert len(members) == 300 and len(signups) == 300


async def test_forget_takes_the_student_out_of_classes_and_exports(harness: Harness, tmp_path: Path) -> None:
    h = harness
    await add_cohort(h, "3e")
    student = await h.make_user("+2250701020304", display_name="Awa")
    other = await h.make_user("+2250701020305", display_name="Yao")
    async with h.services.sessions() as db:
        cohort = await find_cohort(db, "3e")
        assert cohort is not None
        db.add_all([CohortMember(cohort_id=cohort.id, user_id=u.id, joined_at=h.clock())
                    for u in (student, other)])
        await db.commit()
    exported = await console(h, "users", "export", "+2250701020304")
    [membership] = json.loads(exported.out)["data"]["cohort_members"]
    assert exported.code == 0 and membership["cohort_id"] == cohort.id
    forgotten = await console(h, "users", "forget", "+2250701020304")
    assert forgotten.code == 0 and "1 cohort_members" in forgotten.out, forgotten.out + forgotten.err
    async with h.services.sessions() as db:
        assert [s.name for s in await roster(db, cohort.id)] == ["Yao"]
        assert [m.user_id for m in await db.scalars(select(CohortMember))] == [other.id]
