"""`python -m bot operators …` run as the operator runs it: who logs in to the dashboard, each
password kept only as its Argon2id hash; what it prints in the operator's language (DEFAULT_LANGUAGE,
French by default), moments in the school's time zone."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import pytest
from sqlalchemy import select, update

from bot.school import verify_password
from bot.storage.models import Cohort, Operator, OperatorCohort, OperatorSession
from tests.support.console import console
from tests.support.harness import Harness


async def operators(h: Harness) -> dict[str, tuple[Operator, list[str]]]:
    async with h.services.sessions() as db:
        found = {}
        for op in await db.scalars(select(Operator)):
            names = list(await db.scalars(
                select(Cohort.name).join(OperatorCohort, OperatorCohort.cohort_id == Cohort.id)
                .where(OperatorCohort.operator_id == op.id)))
            found[op.email] = (op, sorted(names))
        return found


async def test_add_list_and_remove_operators(harness: Harness) -> None:
    h = harness
    async with h.services.sessions() as db:
        db.add_all([Cohort(name="6e A", created_at=h.clock()), Cohort(name="6e B", created_at=h.clock())])
        await db.commit()
    teacher = await console(h, "operators", "add", "Awa.Kone@Ecole.CI", "--role", "teacher",
                            "--cohort", "6e A", "--cohort", "6e B", "--password-stdin",
                            stdin=b"un mot de passe long\n")
    assert teacher.code == 0, teacher.err
    assert teacher.out == "awa.kone@ecole.ci : teacher de 6e A, 6e B, ajouté\n"
    assert "mot de passe" not in teacher.out
    admin = await console(h, "operators", "add", "chef@ecole.ci", "--role", "admin")
    assert admin.code == 0, admin.err
    [printed] = [line.rsplit(" : ", 1)[1] for line in admin.out.splitlines()
                 if line.startswith("mot de passe (montré une fois, à lui donner ; il n'est pas gardé) : ")]
    found = await operators(h)
    assert set(found) == {"awa.kone@ecole.ci", "chef@ecole.ci"}
    teacher_row, classes = found["awa.kone@ecole.ci"]
    assert classes == ["6e A", "6e B"] and teacher_row.role == "teacher"
    assert teacher_row.password_hash.startswith("$argon2id$")
    assert verify_password(teacher_row.password_hash, "un mot de passe long")
    admin_row, _ = found["chef@ecole.ci"]
    assert verify_password(admin_row.password_hash, printed) and printed not in admin_row.password_hash
    listed = await console(h, "operators", "list")
    assert "awa.kone@ecole.ci : teacher de 6e A, 6e B ; ajouté le " in listed.out, listed.out
    assert "dernière connexion : jamais" in listed.out and "chef@ecole.ci : admin ; " in listed.out
    assert printed not in listed.out and "$argon2" not in listed.out
    twice = await console(h, "operators", "add", "AWA.KONE@ecole.ci", "--role", "admin")
    assert twice.code == 1 and twice.err == (
        "erreur : awa.kone@ecole.ci a déjà un accès (operators remove awa.kone@ecole.ci d'abord)\n")
    async with h.services.sessions() as db:
        db.add(OperatorSession(token_hash="a" * 64, operator_id=teacher_row.id, csrf_token="c",
                               expires_at=h.clock()))
        await db.commit()
    removed = await console(h, "operators", "remove", "awa.kone@ecole.ci")
    assert removed.code == 0 and removed.out == "awa.kone@ecole.ci : retiré (ses sessions sont fermées)\n"
    assert set(await operators(h)) == {"chef@ecole.ci"}
    async with h.services.sessions() as db:
        assert list(await db.scalars(select(OperatorSession))) == []
        assert list(await db.scalars(select(OperatorCohort))) == []
    gone = await console(h, "operators", "remove", "awa.kone@ecole.ci")
    assert gone.code == 1 and gone.err == "erreur : aucun accès avec l'adresse awa.kone@ecole.ci\n"


BAD = [(("add", "not-an-email", "--role", "admin"), 2,
        "erreur : 'not-an-email' n'est pas une adresse e-mail (ex. awa.kone@ecole.ci)",
        "error: 'not-an-email' is not one e-mail address (e.g. awa.kone@ecole.ci)"),
       (("add", "prof@ecole.ci", "--role", "teacher"), 2,
        "erreur : un enseignant ne voit que ses classes : donnez au moins un --cohort NOM",
        "error: a teacher sees only their classes: give at least one --cohort NAME"),
       (("add", "prof@ecole.ci", "--role", "teacher", "--cohort", "Nowhere"), 1,
        "erreur : aucune classe nommée 'Nowhere' (cohorts list les montre ; cohorts create NOM)",
        "error: no class named 'Nowhere' (cohorts list shows them; cohorts create NAME)"),
       (("add", "prof@ecole.ci", "--role", "admin", "--password-stdin"), 2,
        "erreur : le mot de passe fait de 10 à 200 caractères, pas 5",
        "error: the password must be 10 to 200 characters, got 5"),
       (("remove", "prof@ecole.ci"), 1, "erreur : aucun accès avec l'adresse prof@ecole.ci",
        "error: no operator with the e-mail prof@ecole.ci")]


@pytest.mark.parametrize("language", ["fr", "en"])
async def test_bad_requests_change_nothing_and_say_why_in_the_operators_language(
        make_harness: Callable[..., Awaitable[Harness]], language: str) -> None:
    h = await make_harness(DEFAULT_LANGUAGE=language)
    for args, code, fr, en in BAD:
        run = await console(h, "operators", *args, stdin=b"short\n")
        assert (run.code, run.err) == (code, (en if language == "en" else fr) + "\n"), (args, run)
    assert await operators(h) == {}


async def test_the_list_in_english_with_dates_in_the_schools_zone(
        make_harness: Callable[..., Awaitable[Harness]]) -> None:
    h = await make_harness(DEFAULT_LANGUAGE="en", DEFAULT_TIMEZONE="Africa/Douala")
    added = await console(h, "operators", "add", "chef@ecole.ci", "--role", "admin", "--password-stdin",
                          stdin=b"un mot de passe long\n")
    assert added.out == "chef@ecole.ci: admin, added\n", added.err
    async with h.services.sessions() as db:
        await db.execute(update(Operator).values(created_at=datetime(2026, 3, 10, 8, 0, tzinfo=UTC),
                                                 last_login_at=datetime(2026, 3, 11, 23, 30, tzinfo=UTC)))
        await db.commit()
    listed = await console(h, "operators", "list")
    assert listed.out == ("chef@ecole.ci: admin; added Tue 10 Mar 2026, 09:00, "
                          "last login Thu 12 Mar 2026, 00:30\n")
