"""Who is looking at the dashboard: the login (e-mail and Argon2id password), the session cookie
and the CSRF tokens.

- Before a session exists the login form carries a signed double-submit token: a random nonce and
  its HMAC (SECRET_KEY) in a cookie of its own and in the form; both must match and the HMAC hold.
- A session is a random token in an HttpOnly, SameSite=Strict cookie (Secure when PUBLIC_BASE_URL is
  https), valid 12 hours by the server's clock; the table keeps only its SHA-256, with the CSRF
  token every POST of that session must carry.
- Failed logins slow down whoever makes them, per (e-mail, client) and per client, and never lock
  the owner out: bot.web.admin.throttle.
- An unknown e-mail is checked against DUMMY_HASH: same answer, similar time.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from aiohttp import web
from sqlalchemy import delete, select

from bot.school import DUMMY_HASH, hash_password, needs_rehash, verify_password
from bot.services import Services
from bot.storage.models import Operator, OperatorCohort, OperatorSession

SESSION_COOKIE = "deblo_admin"
LOGIN_CSRF_COOKIE = "deblo_admin_login"
SESSION_HOURS = 12
LOGIN_PATH = "/admin/login"
FORM_MAX_BYTES = 8 * 1024


@dataclass(frozen=True)
class Viewer:
    """The operator of a request's session: an admin sees every class (`cohort_ids` None)."""

    operator_id: int
    email: str
    role: str  # admin | teacher
    cohort_ids: frozenset[int] | None
    csrf_token: str

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _secure(services: Services) -> bool:
    return services.settings.public_base_url.startswith("https://")


# --- the login form's CSRF token (before any session) ------------------------------------------


def _sign(services: Services, nonce: str) -> str:
    key = services.settings.secret_key.encode()
    return hmac.new(key, b"admin-login:" + nonce.encode(), hashlib.sha256).hexdigest()


def new_login_token(services: Services) -> str:
    nonce = secrets.token_urlsafe(24)
    return f"{nonce}.{_sign(services, nonce)}"


def login_token_valid(services: Services, cookie: str, submitted: str) -> bool:
    """The form's token is the cookie's and carries our signature (a token a page of another site
    could not read nor forge)."""
    if not cookie or not hmac.compare_digest(cookie.encode(), submitted.encode()):
        return False
    nonce, _, signature = cookie.partition(".")
    # As bytes: compare_digest refuses a str that is not ASCII, and these are anyone's to write.
    return bool(nonce) and hmac.compare_digest(signature.encode(), _sign(services, nonce).encode())


def set_login_cookie(services: Services, resp: web.StreamResponse, token: str) -> None:
    resp.set_cookie(LOGIN_CSRF_COOKIE, token, max_age=3600, path=LOGIN_PATH, httponly=True,
                    samesite="Strict", secure=_secure(services))


# --- checking a password, opening and closing a session ----------------------------------------


async def check_password(services: Services, email: str, password: str) -> Operator | None:
    """The operator whose e-mail and password these are, else None (an unknown e-mail costs the
    same Argon2id verification as a wrong password). A hash made with older parameters is renewed."""
    async with services.sessions() as db:
        operator = await db.scalar(select(Operator).where(Operator.email == email))
    stored = operator.password_hash if operator is not None else DUMMY_HASH
    ok = await asyncio.to_thread(verify_password, stored, password)
    if operator is None or not ok:
        return None
    if needs_rehash(stored):
        renewed = await asyncio.to_thread(hash_password, password)
        async with services.sessions() as db, db.begin():
            row = await db.get(Operator, operator.id)
            if row is not None:
                row.password_hash = renewed
    return operator


async def open_session(services: Services, operator_id: int, resp: web.StreamResponse) -> None:
    token = secrets.token_urlsafe(32)
    now = services.clock()
    async with services.sessions() as db, db.begin():
        db.add(OperatorSession(token_hash=token_hash(token), operator_id=operator_id,
                               csrf_token=secrets.token_urlsafe(32), created_at=now,
                               expires_at=now + timedelta(hours=SESSION_HOURS)))
        operator = await db.get(Operator, operator_id)
        if operator is not None:
            operator.last_login_at = now
    resp.set_cookie(SESSION_COOKIE, token, max_age=SESSION_HOURS * 3600, path="/admin", httponly=True,
                    samesite="Strict", secure=_secure(services))
    resp.del_cookie(LOGIN_CSRF_COOKIE, path=LOGIN_PATH)


async def close_session(services: Services, request: web.Request, resp: web.StreamResponse) -> None:
    token = request.cookies.get(SESSION_COOKIE, "")
    if token:
        async with services.sessions() as db, db.begin():
            await db.execute(delete(OperatorSession).where(OperatorSession.token_hash == token_hash(token)))
    resp.del_cookie(SESSION_COOKIE, path="/admin")


async def viewer_of(services: Services, request: web.Request) -> Viewer | None:
    """The request's operator, or None without a live session (an expired row is deleted)."""
    token = request.cookies.get(SESSION_COOKIE, "")
    if not token or len(token) > 200:
        return None
    now: datetime = services.clock()
    async with services.sessions() as db, db.begin():
        row = await db.get(OperatorSession, token_hash(token))
        if row is None:
            return None
        if row.expires_at <= now:
            await db.delete(row)
            return None
        operator = await db.get(Operator, row.operator_id)
        if operator is None:
            return None
        cohorts: frozenset[int] | None = None
        if operator.role != "admin":
            cohorts = frozenset((await db.scalars(select(OperatorCohort.cohort_id).where(
                OperatorCohort.operator_id == operator.id))).all())
        return Viewer(operator.id, operator.email, operator.role, cohorts, row.csrf_token)


def csrf_ok(viewer: Viewer, submitted: str) -> bool:
    return bool(submitted) and hmac.compare_digest(viewer.csrf_token.encode(), submitted.encode())
