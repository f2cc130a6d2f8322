"""The dashboard's door: login, its failures and throttle (the guesser slowed down, the owner never
locked out, behind a trusted proxy too), CSRF on every POST, the session's cookie,
its expiry on the server's clock, logout, and the redirect of every page without a session."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from sqlalchemy import func, select

from bot.storage.models import OperatorSession
from bot.web.admin import SESSION_COOKIE, throttle
from bot.web.admin.throttle import MAX_DELAY_S, delay_after
from tests.support.admin import PASSWORD, Client, client, csrf_of, logged_in, make_operator
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


def test_the_waits_grow_from_one_second_to_fifteen_minutes() -> None:
    assert [delay_after(n, 5) for n in range(1, 10)] == [0, 0, 0, 0, 1, 2, 4, 8, 16]
    assert delay_after(10_000, 5) == MAX_DELAY_S == 900


async def _guess(c: Client, email: str, times: int) -> None:
    for _ in range(times):
        assert (await c.try_login(email, "guess"))[0] == 401


async def test_a_strangers_guesses_slow_the_stranger_and_never_lock_the_owner_out(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    h = harness
    # The wait runs from when a guess is counted, before its slow password check: a first wait of
    # 4 s rather than 1 leaves that check room on a busy machine, where it once took the whole second.
    monkeypatch.setattr(throttle, "FIRST_DELAY_S", 4.0)
    await make_operator(h, "a@ecole.ci")
    stranger, owner, owner_again = client(h, "127.0.0.2"), client(h, "127.0.0.3"), client(h, "127.0.0.3")
    try:
        await _guess(stranger, "a@ecole.ci", 5)
        status, page, resp = await stranger.try_login("a@ecole.ci")  # not checked: even the right one
        wait = int(resp.headers.get("Retry-After", "0"))
        assert status == 429 and 1 <= wait <= 4
        assert f"depuis cette connexion. Réessayez dans {wait} s." in page
        # The owner, from their own client, logs in at once.
        assert (await owner.try_login("a@ecole.ci"))[0] == 303
        # The stranger's next guess is checked once the wait is over; the wait then doubles.
        await asyncio.sleep(wait + 0.05)
        await _guess(stranger, "a@ecole.ci", 1)
        status, _page, resp = await stranger.try_login("a@ecole.ci", "guess")
        wait = int(resp.headers.get("Retry-After", "0"))
        assert status == 429 and 4 < wait <= 8
        assert (await owner_again.try_login("a@ecole.ci"))[0] == 303
        # Whoever is at the stranger's client with the right password gets in after the wait.
        await asyncio.sleep(wait + 0.05)
        assert (await stranger.try_login("a@ecole.ci"))[0] == 303
        assert await _sessions(h) == 3
    finally:
        for c in (stranger, owner, owner_again):
            await c.close()


async def test_a_client_trying_many_emails_waits_and_no_other_client_does(harness: Harness) -> None:
    h = harness
    await make_operator(h, "b@ecole.ci")
    sprayer, other = client(h, "127.0.0.4"), client(h, "127.0.0.5")
    try:
        for n in range(20):  # a few mistakes each, from one address: not a reason to wait yet
            assert (await sprayer.try_login(f"guess{n}@ecole.ci", "guess"))[0] == 401
        status, _page, resp = await sprayer.try_login("b@ecole.ci")
        assert status == 429 and resp.headers["Retry-After"] == "1"
        assert (await other.try_login("b@ecole.ci"))[0] == 303
    finally:
        for c in (sprayer, other):
            await c.close()


async def test_behind_a_trusted_proxy_each_browser_is_its_own_client(
    make_harness: Callable[..., Awaitable[Harness]],
) -> None:
    h = await make_harness(TRUSTED_PROXIES="127.0.0.1")
    await make_operator(h, "a@ecole.ci")
    # The proxy (127.0.0.1) appends the address each request came from; what is left of it is the
    # browser's to write: the stranger claims to be the owner's address, in vain.
    stranger = client(h, "127.0.0.1", forwarded_for="198.51.100.7, 203.0.113.9")
    owner = client(h, "127.0.0.1", forwarded_for="198.51.100.7")
    # A peer that is no trusted proxy is not believed: a new address per guess changes nothing.
    direct = [client(h, "127.0.0.2", forwarded_for=f"192.0.2.{n}") for n in range(6)]
    try:
        await _guess(stranger, "a@ecole.ci", 5)
        assert (await stranger.try_login("a@ecole.ci"))[0] == 429
        assert (await owner.try_login("a@ecole.ci"))[0] == 303
        for c in direct[:5]:
            await _guess(c, "a@ecole.ci", 1)
        assert (await direct[5].try_login("a@ecole.ci"))[0] == 429
    finally:
        for c in (stranger, owner, *direct):
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
