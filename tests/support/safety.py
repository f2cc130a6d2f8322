"""Helpers of the safety tests: a class with its teachers and admins, the flags, who got what."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from bot.school import hash_password
from bot.storage.models import Cohort, CohortMember, Operator, OperatorCohort, SafetyFlag

IVORIAN = "+2250700000101"
CAMEROONIAN = "+237670000102"
BENINESE = "+2290190000103"
DISTRESS = "J'ai envie d'en finir, personne ne m'écoute à la maison"


async def flags(h: Any) -> list[SafetyFlag]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(SafetyFlag).order_by(SafetyFlag.id))).all())


async def add_operator(h: Any, email: str, role: str, *cohorts: str) -> Operator:
    async with h.services.sessions() as db:
        operator = Operator(email=email, role=role, password_hash=hash_password("pw-not-used"))
        db.add(operator)
        await db.flush()
        for name in cohorts:
            cohort = await db.scalar(select(Cohort).where(Cohort.name == name))
            if cohort is None:
                cohort = Cohort(name=name)
                db.add(cohort)
                await db.flush()
            db.add(OperatorCohort(operator_id=operator.id, cohort_id=cohort.id))
        await db.commit()
        return operator


async def enrol(h: Any, user_id: int, cohort_name: str) -> None:
    async with h.services.sessions() as db:
        cohort = await db.scalar(select(Cohort).where(Cohort.name == cohort_name))
        if cohort is None:
            cohort = Cohort(name=cohort_name)
            db.add(cohort)
            await db.flush()
        db.add(CohortMember(cohort_id=cohort.id, user_id=user_id))
        await db.commit()
