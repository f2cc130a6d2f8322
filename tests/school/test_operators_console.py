"""`python -m bot operators …` run as the operator runs it: who logs in to the dashboard, each
password kept only as its Argon2id hash."""

from __future__ import annotations

from sqlalchemy import select

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
    assert teacher.code == 0 and "awa.kone@ecole.ci: teacher of 6e A, 6e B" in teacher.out, teacher.err
    assert "password" not in teacher.out
    admin = await console(h, "operators", "add", "chef@ecole.ci", "--role", "admin")
    assert admin.code == 0, admin.err
    [printed] = [line.rsplit(": ", 1)[1] for line in admin.out.splitlines() if line.startswith("password")]
    found = await operators(h)
    assert set(found) == {"awa.kone@ecole.ci", "chef@ecole.ci"}
    teacher_row, classes = found["awa.kone@ecole.ci"]
    assert classes == ["6e A", "6e B"] and teacher_row.role == "teacher"
    assert teacher_row.password_hash.startswith("$argon2id$")
    assert verify_password(teacher_row.password_hash, "un mot de passe long")
    admin_row, _ = found["chef@ecole.ci"]
    assert verify_password(admin_row.password_hash, printed) and printed not in admin_row.password_hash
    listed = await console(h, "operators", "list")
    assert "awa.kone@ecole.ci: teacher of 6e A, 6e B" in listed.out and "chef@ecole.ci: admin" in listed.out
    assert printed not in listed.out and "$argon2" not in listed.out
    twice = await console(h, "operators", "add", "AWA.KONE@ecole.ci", "--role", "admin")
    assert twice.code == 1 and "already an operator" in twice.err
    async with h.services.sessions() as db:
        db.add(OperatorSession(token_hash="a" * 64, operator_id=teacher_row.id, csrf_token="c",
                               expires_at=h.clock()))
        await db.commit()
    removed = await console(h, "operators", "remove", "awa.kone@ecole.ci")
    assert removed.code == 0, removed.err
    assert set(await operators(h)) == {"chef@ecole.ci"}
    async with h.services.sessions() as db:
        assert list(await db.scalars(select(OperatorSession))) == []
        assert list(await db.scalars(select(OperatorCohort))) == []
    gone = await console(h, "operators", "remove", "awa.kone@ecole.ci")
    assert gone.code == 1 and "no operator" in gone.err


async def test_bad_requests_change_nothing(harness: Harness) -> None:
    h = harness
    cases = [
        (("add", "not-an-email", "--role", "admin"), 2, "is not one e-mail address"),
        (("add", "prof@ecole.ci", "--role", "teacher"), 2, "at least one --cohort"),
        (("add", "prof@ecole.ci", "--role", "teacher", "--cohort", "Nowhere"), 1, "no class named 'Nowhere'"),
        (("add", "prof@ecole.ci", "--role", "admin", "--password-stdin"), 2, "10 to 200 characters"),
    ]
    for args, code, said in cases:
        run = await console(h, "operators", *args, stdin=b"short\n")
        assert run.code == code and said in run.err, (args, run)
    assert await operators(h) == {}
