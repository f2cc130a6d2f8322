"""The people who log in to the dashboard: an admin sees everything, a teacher their classes only.

An e-mail is one plain mailbox (bot.channel.email's check), stored lower-cased, so that
« Awa@School.ci » and « awa@school.ci » are one account. A teacher has at least one class: there
is no other way to give them one later than removing and adding them again, and a teacher with no
class would see nothing. The password is kept as an Argon2id hash only (passwords.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel.email import normalize_address
from bot.school.errors import SchoolError
from bot.storage.db import rowcount
from bot.storage.models import Cohort, Operator, OperatorCohort
from bot.texts import fr_en

__all__ = ["PASSWORD_MAX", "PASSWORD_MIN", "ROLES", "OperatorError", "OperatorView", "add_operator",
           "list_operators", "operator_cohorts", "password_problem", "remove_operator", "role_problem",
           "valid_email"]

ROLES = ("admin", "teacher")
PASSWORD_MIN, PASSWORD_MAX = 10, 200


class OperatorError(SchoolError, ValueError):
    """The request names something that is not there, or is already there (exit code 1)."""


@dataclass(frozen=True)
class OperatorView:
    email: str
    role: str
    cohorts: tuple[str, ...]
    created_at: datetime
    last_login_at: datetime | None


def valid_email(raw: str) -> str | None:
    """The address lower-cased, or None when it is not one plain mailbox."""
    address = normalize_address(raw)
    return address.lower() if address else None


def role_problem(role: str, cohorts: list[str], language: str) -> str | None:
    """What is wrong with the role and classes asked, in the operator's language; None when nothing."""
    if role not in ROLES:
        return fr_en(language, f"--role vaut {' ou '.join(ROLES)}, pas {role!r}",
                     f"--role must be one of {', '.join(ROLES)}, got {role!r}")
    if role == "teacher" and not cohorts:
        return fr_en(language, "un enseignant ne voit que ses classes : donnez au moins un --cohort NOM",
                     "a teacher sees only their classes: give at least one --cohort NAME")
    if role == "admin" and cohorts:
        return fr_en(language,
                     "un administrateur voit toutes les classes : --cohort est pour les enseignants",
                     "an admin sees every class: --cohort is for teachers")
    return None


def password_problem(password: str, language: str) -> str | None:
    if not PASSWORD_MIN <= len(password) <= PASSWORD_MAX:
        return fr_en(language,
                     f"le mot de passe fait de {PASSWORD_MIN} à {PASSWORD_MAX} caractères, "
                     f"pas {len(password)}",
                     f"the password must be {PASSWORD_MIN} to {PASSWORD_MAX} characters, got {len(password)}")
    if any(ord(c) < 32 or ord(c) == 127 for c in password):
        return fr_en(language, "le mot de passe ne contient pas de caractère de contrôle",
                     "the password must not contain control characters")
    return None


async def add_operator(db: AsyncSession, email: str, role: str, cohort_names: list[str],
                       password_hash: str, now: datetime, language: str) -> Operator:
    """Adds the operator (the caller commits); OperatorError, in the operator's language, if the e-mail
    exists or a class does not."""
    if await db.scalar(select(Operator.id).where(Operator.email == email)) is not None:
        raise OperatorError(fr_en(language, f"{email} a déjà un accès (operators remove {email} d'abord)",
                                  f"{email} is already an operator (operators remove {email} first)"))
    wanted = list(dict.fromkeys(cohort_names))
    found = {c.name: c for c in await db.scalars(select(Cohort).where(Cohort.name.in_(wanted)))}
    missing = [name for name in wanted if name not in found]
    if missing:
        raise OperatorError(fr_en(
            language, f"aucune classe nommée {missing[0]!r} (cohorts list les montre ; cohorts create NOM)",
            f"no class named {missing[0]!r} (cohorts list shows them; cohorts create NAME)"))
    operator = Operator(email=email, role=role, password_hash=password_hash, created_at=now)
    db.add(operator)
    await db.flush()
    db.add_all(OperatorCohort(operator_id=operator.id, cohort_id=found[name].id) for name in wanted)
    await db.flush()
    return operator


async def operator_cohorts(db: AsyncSession, operator_id: int) -> list[Cohort]:
    """The classes a teacher sees, by name."""
    return list(await db.scalars(
        select(Cohort).join(OperatorCohort, OperatorCohort.cohort_id == Cohort.id)
        .where(OperatorCohort.operator_id == operator_id).order_by(Cohort.name)))


async def list_operators(db: AsyncSession) -> list[OperatorView]:
    """Every operator, by e-mail, with their classes."""
    names: dict[int, list[str]] = {}
    for operator_id, name in (await db.execute(
        select(OperatorCohort.operator_id, Cohort.name).join(Cohort, Cohort.id == OperatorCohort.cohort_id)
        .order_by(Cohort.name)
    )).all():
        names.setdefault(operator_id, []).append(name)
    return [OperatorView(o.email, o.role, tuple(names.get(o.id, ())), o.created_at, o.last_login_at)
            for o in await db.scalars(select(Operator).order_by(Operator.email))]


async def remove_operator(db: AsyncSession, email: str, language: str) -> None:
    """Removes the operator; their classes and sessions go with them (ON DELETE CASCADE, which SQLite
    enforces too: bot.storage.db turns its foreign keys on). OperatorError if unknown."""
    result = await db.execute(delete(Operator).where(Operator.email == email))
    if rowcount(result) != 1:
        raise OperatorError(fr_en(language, f"aucun accès avec l'adresse {email}",
                                  f"no operator with the e-mail {email}"))
