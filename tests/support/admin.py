"""The dashboard's test helpers: operators, classes, mastery, results, questions taught again and
flags as rows (the CLIs
that make them are tested on their own), and a logged-in HTTP client (its own cookie jar, its own
source address on the loopback so that the throttle's clients can be told apart, and the
X-Forwarded-For a proxy in front would add to its requests)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

import aiohttp
from sqlalchemy import insert

from bot.school import hash_password
from bot.storage.models import (
    Cohort,
    CohortMember,
    ExerciseResult,
    Operator,
    OperatorCohort,
    QuizItem,
    SafetyFlag,
    SkillMastery,
    User,
)
from tests.support.harness import Harness

PASSWORD = "correct horse battery staple"
_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


async def make_operator(h: Harness, email: str, role: str = "admin", cohorts: Iterable[int] = (),
                        password: str = PASSWORD) -> int:
    async with h.services.sessions() as db, db.begin():
        operator = Operator(email=email, role=role, password_hash=hash_password(password),
                            created_at=h.clock())
        db.add(operator)
        await db.flush()
        for cohort_id in cohorts:
            db.add(OperatorCohort(operator_id=operator.id, cohort_id=cohort_id))
        return operator.id


async def make_cohort(h: Harness, name: str, users: Iterable[User]) -> int:
    async with h.services.sessions() as db, db.begin():
        cohort = Cohort(name=name, created_at=h.clock())
        db.add(cohort)
        await db.flush()
        for user in users:
            db.add(CohortMember(cohort_id=cohort.id, user_id=user.id, joined_at=h.clock()))
        return cohort.id


async def set_mastery(h: Harness, user_id: int, skills: dict[str, float],
                      subject: str = "Mathématiques") -> None:
    rows = [{"user_id": user_id, "subject": subject, "skill": skill.casefold(), "label": skill, "p_known": p,
             "answers": 3, "correct": 2, "updated_at": h.clock()} for skill, p in skills.items()]
    async with h.services.sessions() as db, db.begin():
        await db.execute(insert(SkillMastery), rows)


async def add_result(h: Harness, user_id: int, skill: str, correct: bool, at: datetime,
                     subject: str = "Mathématiques") -> None:
    async with h.services.sessions() as db, db.begin():
        db.add(ExerciseResult(user_id=user_id, subject=subject, topic=skill, skill=skill.casefold(),
                              correct=correct, source="quiz", verified=True, created_at=at))


async def add_retaught(h: Harness, user_id: int, skill: str, times: int,
                       subject: str = "Mathématiques") -> None:
    """A question on `skill` missed twice in a row, and `times` new questions asked to teach it again
    (as interactive_quiz with `replaces` keeps them: on the missed one's subject and skill)."""
    def item(n: int, replaces: int | None = None) -> QuizItem:
        return QuizItem(user_id=user_id, quiz_id=f"rt{user_id}-{skill}-{n}"[:32], quiz_type="mcq",
                        question=f"{skill} ?", options=["a", "b"], correct_index=0, subject=subject,
                        skill=skill.casefold(), replaces_item_id=replaces, created_at=h.clock())

    async with h.services.sessions() as db, db.begin():
        missed = item(0)
        missed.lapses, missed.miss_streak, missed.retaught_at = 2, 0, h.clock()
        db.add(missed)
        await db.flush()
        db.add_all([item(n + 1, missed.id) for n in range(times)])


async def add_flag(h: Harness, user_id: int, excerpt: str, category: str = "self_harm") -> int:
    async with h.services.sessions() as db, db.begin():
        flag = SafetyFlag(user_id=user_id, category=category, source="phrases", excerpt=excerpt,
                          created_at=h.clock() - timedelta(minutes=5))
        db.add(flag)
        await db.flush()
        return flag.id


def csrf_of(html: str) -> str:
    found = _TOKEN.search(html)
    assert found, "no csrf_token field in the page"
    return found.group(1)


Answer = tuple[int, str, aiohttp.ClientResponse]  # status, body, response


@dataclass
class Client:
    """A browser-like client of the dashboard: cookies kept, redirects not followed."""

    h: Harness
    session: aiohttp.ClientSession

    async def get(self, path: str, headers: dict[str, str] | None = None) -> Answer:
        async with self.session.get(self.h.base_url + path, allow_redirects=False, headers=headers) as resp:
            return resp.status, await resp.text(), resp

    async def post(self, path: str, form: dict[str, str]) -> Answer:
        async with self.session.post(self.h.base_url + path, data=form, allow_redirects=False) as resp:
            return resp.status, await resp.text(), resp

    async def post_file(self, path: str, fields: dict[str, str], filename: str, data: bytes) -> Answer:
        """A multipart form, as a page's file input sends it (the file as `file`)."""
        form = aiohttp.FormData()
        for name, value in fields.items():
            form.add_field(name, value)
        form.add_field("file", data, filename=filename, content_type="text/csv")
        async with self.session.post(self.h.base_url + path, data=form, allow_redirects=False) as resp:
            return resp.status, await resp.text(), resp

    async def try_login(self, email: str, password: str = PASSWORD) -> Answer:
        _status, page, _resp = await self.get("/admin/login")
        form = {"email": email, "password": password, "csrf_token": csrf_of(page)}
        return await self.post("/admin/login", form)

    async def csrf(self) -> str:
        """The session's CSRF token, as the logout form of any page carries it."""
        _status, page, _resp = await self.get("/admin/flags")
        return csrf_of(page)

    async def close(self) -> None:
        await self.session.close()


def client(h: Harness, source: str = "127.0.0.1", forwarded_for: str | None = None) -> Client:
    connector = aiohttp.TCPConnector(local_addr=(source, 0))
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for is not None else None
    return Client(h, aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.CookieJar(unsafe=True),
                                           headers=headers))


async def logged_in(h: Harness, email: str, source: str = "127.0.0.1") -> Client:
    c = client(h, source)
    status, body, resp = await c.try_login(email)
    assert status == 303, (status, body[:300])
    assert resp.headers["Location"] == "/admin/"
    return c
