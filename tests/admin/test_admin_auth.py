"""The dashboard's door: login, its failures and throttle, CSRF on every POST, the session's cookie,
its expiry on the server's clock, logout, and the redirect of every page without a session."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy import func, select

from bot.storage.models import OperatorSession
from bot.web.admin import SESSION_COOKIE
from tests.support.admin import PASSWORD, client, csrf_of, logged_in, make_operator
from tests.support.harness import Harness


async def _sessions(h: Harness) -> int:
    async with h.services.sessions() as db:
        return int(await db.scalar(select(func.count()).select_from(OperatorSession)) or 0)


async def test_login_opens_a_strict_session_and_logout_closes_it(harness: Harness) -> None:
    h = harness
    await make_operator(h, "admin@ecole.ci")
    c = client(h)
    try:
        status, page, resp = await c.get("/admin/login")
        assert status == 200 and 'name="email"' in page and 'name="password"' in page
        assert resp.headers["Cache-Control"] == "no-store"
        status, _body, resp = await c.post("/admin/login", {
            "email": " Admin@Ecole.CI ", "password": PASSWORD, "csrf_token": csrf_of(page)})
        assert status == 303 and resp.headers["Location"] == "/admin/"
        cookie = resp.cookies[SESSION_COOKIE]
        assert cookie["httponly"] and cookie["samesite"] == "Strict" and not cookie["secure"]
        assert int(cookie["max-age"]) == 12 * 3600
        async with h.services.sessions() as db:
            row = await db.scalar(select(OperatorSession))
        assert row is not None and row.token_hash != cookie.value and len(row.token_hash) == 64
        assert (row.expires_at - h.clock()).total_seconds() == 12 * 3600

        status, page, _resp = await c.get("/admin/")
        assert status == 200 and "admin@ecole.ci" in page
        status, _body, _resp = await c.post("/admin/logout", {})
        assert status == 403 and await _sessions(h) == 1
        status, _body, _resp = await c.post("/admin/logout", {"csrf_token": "x" * 43})
        assert status == 403 and await _sessions(h) == 1
        status, _body, resp = await c.post("/admin/logout", {"csrf_token": csrf_of(page)})
        assert status == 303 and resp.headers["Location"] == "/admin/login"
        assert await _sessions(h) == 0
        status, _body, resp = await c.get("/admin/")
        assert status == 303 and resp.headers["Location"] == "/admin/login"
    finally:
        await c.close()


async def test_a_wrong_password_and_an_unknown_email_get_the_same_401(harness: Harness) -> None:
    h = harness
    await make_operator(h, "prof@ecole.ci", role="teacher")
    c = client(h)
    try:
        wrong = await c.try_login("prof@ecole.ci", "not the password")
        unknown = await c.try_login("nobody@ecole.ci")
        for status, page, resp in (wrong, unknown):
            assert status == 401
            assert "E-mail ou mot de passe incorrect." in page and 'name="csrf_token"' in page
            assert SESSION_COOKIE not in resp.cookies
        assert await _sessions(h) == 0
    finally:
        await c.close()


async def test_five_failures_for_one_email_or_one_address_give_429(harness: Harness) -> None:
    h = harness
    await make_operator(h, "a@ecole.ci")
    await make_operator(h, "b@ecole.ci")
    first, second, third = client(h, "127.0.0.2"), client(h, "127.0.0.3"), client(h, "127.0.0.4")
    try:
        for _ in range(5):
            assert (await first.try_login("a@ecole.ci", "guess"))[0] == 401
        status, page, _resp = await first.try_login("a@ecole.ci")  # even the right password
        assert status == 429 and "Réessayez dans 15 minutes" in page
        # The e-mail's counter holds from another address; that address is not blocked for others.
        assert (await second.try_login("a@ecole.ci"))[0] == 429
        assert (await second.try_login("b@ecole.ci"))[0] == 303
        # Five e-mails tried from one address block the address, whatever the e-mail.
        for n in range(5):
            assert (await third.try_login(f"guess{n}@ecole.ci", "guess"))[0] == 401
        assert (await third.try_login("b@ecole.ci"))[0] == 429
        assert await _sessions(h) == 1
    finally:
        for c in (first, second, third):
            await c.close()


async def test_the_login_needs_its_csrf_token(harness: Harness) -> None:
    h = harness
    await make_operator(h, "admin@ecole.ci")
    c = client(h)
    try:
        form = {"email": "admin@ecole.ci", "password": PASSWORD}
        assert (await c.post("/admin/login", form))[0] == 403  # no cookie, no token
        _status, page, _resp = await c.get("/admin/login")
        assert (await c.post("/admin/login", {**form, "csrf_token": "other.token"}))[0] == 403
        # A token of one's own making, in the cookie and the form alike, lacks our signature.
        forged = "nonce.0000"
        c.session.cookie_jar.update_cookies({"deblo_admin_login": forged})
        assert (await c.post("/admin/login", {**form, "csrf_token": forged}))[0] == 403
        assert await _sessions(h) == 0
        fresh = client(h)
        try:
            _status, page, _resp = await fresh.get("/admin/login")
            assert (await fresh.post("/admin/login", {**form, "csrf_token": csrf_of(page)}))[0] == 303
        finally:
            await fresh.close()
    finally:
        await c.close()


async def test_a_session_ends_after_12_hours_on_the_server(harness: Harness) -> None:
    h = harness
    await make_operator(h, "admin@ecole.ci")
    c = await logged_in(h, "admin@ecole.ci")
    try:
        h.clock.advance(hours=11, minutes=59)
        assert (await c.get("/admin/"))[0] == 200
        h.clock.advance(minutes=2)
        status, _body, resp = await c.get("/admin/")  # the browser still sends the cookie
        assert status == 303 and resp.headers["Location"] == "/admin/login"
        assert await _sessions(h) == 0  # the expired row is gone
    finally:
        await c.close()


async def test_without_a_session_every_page_redirects_to_the_login(harness: Harness) -> None:
    h = harness
    c = client(h)
    try:
        for path in ("/admin/", "/admin/flags", "/admin/cohorts/6eA", "/admin/cohorts/6eA/results.csv",
                     "/admin/cohorts/6eA/roster.csv", "/admin/students/1"):
            status, _body, resp = await c.get(path)
            assert (status, resp.headers.get("Location")) == (303, "/admin/login"), path
        status, _body, resp = await c.post("/admin/flags/1/acknowledge", {"csrf_token": "x"})
        assert (status, resp.headers.get("Location")) == (303, "/admin/login")
        c.session.cookie_jar.update_cookies({SESSION_COOKIE: "made-up-token"})
        assert (await c.get("/admin/"))[0] == 303
    finally:
        await c.close()


async def test_the_cookie_is_secure_behind_https(make_harness: Callable[..., Awaitable[Harness]]) -> None:
    h = await make_harness(PUBLIC_BASE_URL="https://deblo.example.ci")
    await make_operator(h, "admin@ecole.ci")
    c = client(h)
    try:
        _status, page, resp = await c.get("/admin/login")
        login_cookie = resp.cookies["deblo_admin_login"]
        assert login_cookie["secure"] and login_cookie["samesite"] == "Strict"
        # A browser sends a Secure cookie over https only: here the proxy's https is played by hand.
        form = {"email": "admin@ecole.ci", "password": PASSWORD, "csrf_token": csrf_of(page)}
        async with c.session.post(h.base_url + "/admin/login", data=form, allow_redirects=False,
                                  headers={"Cookie": f"deblo_admin_login={login_cookie.value}"}) as resp:
            assert resp.status == 303 and resp.cookies[SESSION_COOKIE]["secure"]
    finally:
        await c.close()
