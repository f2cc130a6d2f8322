"""Every odd byte is a 400 with one log line, never a 500 with a traceback: hypothesis over what a
stranger reaches (the login form, the dashboard's URLs, a job stream's header and path, the signed
Twilio webhook's fields) and over the operator's console arguments, on both backends (PostgreSQL
refuses a NUL in any text; SQLite stores it). The attacks that once gave 500 are the first examples:
a non-ASCII login CSRF token, a NUL in the login e-mail, a NUL in a class name in a dashboard URL,
`Last-Event-ID: ²` on a job stream."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from urllib.parse import quote_from_bytes, quote_plus

import pytest
from hypothesis import strategies as st
from sqlalchemy import select

from bot.channel.links import job_signature
from bot.storage.models import OutboundMessage
from bot.web.admin.auth import LOGIN_CSRF_COOKIE, SESSION_COOKIE, new_login_token
from tests.support.admin import logged_in, make_cohort, make_operator
from tests.support.console import console
from tests.support.fuzz import (
    LogWatch,
    form,
    form_field,
    header_bytes,
    next_source,
    no_traceback,
    odd_bytes,
    odd_text,
    path_segment,
    play,
    send,
)
from tests.support.harness import Harness
from tests.support.job_page import done, make_job

# Each example is played on the harness's event loop while hypothesis draws the next in its thread:
# the bot's own use of `random` there looks to hypothesis like a strategy's.
pytestmark = pytest.mark.filterwarnings("ignore:Do not use the `random` module inside strategies")

PHONE = "+2250700000701"
FORM = (b"Content-Type", b"application/x-www-form-urlencoded")


# --- the login form: no session needed ---------------------------------------------------------

# (odd tokens, the cookie's and the form's, or a genuine pair, e-mail, password). A genuine pair in
# half the cases, so that the e-mail reaches the database, where PostgreSQL refused a NUL.
Login = tuple[bool, tuple[bytes, bytes], bytes, bytes]
ODD_TOKEN = header_bytes().map(lambda b: b.translate(None, b";, \""))  # one cookie's value
TOKENS = st.one_of(ODD_TOKEN.map(lambda t: (t, quote_from_bytes(t).encode())),  # the same in both places
                   st.tuples(st.just(b""), form_field()), st.tuples(ODD_TOKEN, form_field()))
TYPED = st.one_of(odd_text().map(lambda t: quote_plus(t).encode()), form_field())
LOGINS = st.tuples(st.booleans(), TOKENS, TYPED, TYPED)


async def test_the_login_form_answers_odd_bytes_without_a_500(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    h = harness
    await make_operator(h, "admin@ecole.ci")
    watch = LogWatch(caplog)

    async def check(case: Login) -> None:
        odd, tokens, email, password = case
        genuine = new_login_token(h.services).encode()
        cookie, token = tokens if odd else (genuine, genuine)
        watch.mark()
        answer = await send(h.base_url, b"POST /admin/login", [
            FORM, (b"Cookie", LOGIN_CSRF_COOKIE.encode() + b"=" + cookie)],
            form([("email", email), ("password", password), ("csrf_token", token)]), source=next_source())
        watch.check(answer.status, case)

    unused = (b"", b"")
    await play(LOGINS, check, examples=[
        (True, ("x.é".encode(), quote_plus("x.é").encode()), b"a", b"b"),  # a token out of ASCII in both
        (False, unused, quote_plus("admin\x00@ecole.ci").encode(), b"guess"),  # PostgreSQL refused the NUL
        (False, unused, b"admin%FF@ecole.ci", b"guess"), (False, unused, b"admin\xff", b"guess")])


# --- the dashboard's URLs, as an admin and as a teacher ------------------------------------------

PAGES = (b"/admin/cohorts/%s", b"/admin/cohorts/%s/roster.csv", b"/admin/cohorts/%s/results.csv",
         b"/admin/students/%s", b"/admin/%s", b"/admin/flags?%s", b"/admin/?x=%s", b"/admin/%s/flags")
Visit = tuple[bool, bytes, bytes, bytes]  # (as the admin, page, segment, query)
VISITS = st.tuples(st.booleans(), st.sampled_from(PAGES), path_segment(),
                   st.one_of(st.just(b""), path_segment().map(lambda s: b"?q=" + s)))


async def test_the_dashboards_urls_answer_odd_bytes_without_a_500(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    h = harness
    user = await h.make_user(PHONE, display_name="Awa")
    cohort_id = await make_cohort(h, "6e A", [user])
    await make_operator(h, "admin@ecole.ci")
    await make_operator(h, "prof@ecole.ci", role="teacher", cohorts=[cohort_id])
    cookies = {}
    for admin, email in ((True, "admin@ecole.ci"), (False, "prof@ecole.ci")):
        client = await logged_in(h, email)
        cookies[admin] = next(c.value for c in client.session.cookie_jar if c.key == SESSION_COOKIE)
        await client.close()
    watch = LogWatch(caplog)

    async def check(case: Visit) -> None:
        admin, page, segment, query = case
        watch.mark()
        cookie = (b"Cookie", f"{SESSION_COOKIE}={cookies[admin]}".encode())
        answer = await send(h.base_url, b"GET " + page.replace(b"%s", segment, 1) + query, [cookie])
        watch.check(answer.status, case)

    await play(VISITS, check, examples=[(True, PAGES[0], b"6e%00A", b""), (False, PAGES[0], b"6e%00A", b""),
                                       (True, PAGES[1], b"6e%20A", b"?q=%00")])


# --- a job's page and stream -------------------------------------------------------------------

Stream = tuple[bytes, bytes | None, bytes | None, bytes | None]  # (method, Last-Event-ID, id, sig)
STREAMS = st.tuples(st.sampled_from((b"GET", b"HEAD")), st.one_of(st.none(), header_bytes()),
                    st.one_of(st.none(), path_segment()), st.one_of(st.none(), path_segment()))


async def test_a_job_stream_answers_odd_headers_and_paths_without_a_500(
    make_harness: Callable[..., Awaitable[Harness]], caplog: pytest.LogCaptureFixture
) -> None:
    h = await make_harness(SSE_MAX_SECONDS="0.5", SSE_KEEPALIVE_S="0.1")
    job = await make_job(h, await h.make_user(PHONE), "Mon bilan")
    await done(h, job.id, "Voilà.", [])
    genuine = job_signature(h.settings, job.id).encode()
    watch = LogWatch(caplog)

    async def check(case: Stream) -> None:
        method, last_id, job_id, sig = case
        headers = [(b"Last-Event-ID", last_id)] if last_id is not None else []
        target = b"/jobs/%s/events?sig=%s" % (job_id or str(job.id).encode(), sig or genuine)
        watch.mark()
        answer = await send(h.base_url, method + b" " + target, headers, source=next_source())
        watch.check(answer.status, case)

    await play(STREAMS, check, examples=[(b"GET", "²".encode(), None, None), (b"GET", b"1\x00", None, None),
                                         (b"GET", b"\xb2", None, None), (b"GET", None, b"1%00", None)])


# --- Twilio's webhook, signed as Twilio signs it -------------------------------------------------

INBOUND_FIELDS = ("Body", "ProfileName", "From", "WaId", "MessageSid", "NumMedia", "MediaUrl0",
                  "MediaContentType0", "ExternalUserId", "ButtonPayload", "ButtonText", "Latitude")
STATUS_FIELDS = ("MessageStatus", "SmsStatus", "ErrorCode", "ErrorMessage", "To", "From")
Webhook = tuple[str, dict[str, str]]  # (path, fields over the ordinary ones)
WEBHOOKS = st.one_of(
    *(st.tuples(st.just(path), st.dictionaries(st.sampled_from(fields), odd_text(), max_size=3))
      for path, fields in (("/twilio/inbound", INBOUND_FIELDS), ("/twilio/status", STATUS_FIELDS))))


async def test_the_signed_webhooks_fields_are_answered_without_a_500(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    h = harness
    await h.make_user(PHONE)
    await h.inbound(PHONE, "Bonjour")
    await h.settle()
    async with h.services.sessions() as db:
        sid = await db.scalar(select(OutboundMessage.sid).where(OutboundMessage.sid.is_not(None)))
    assert sid  # a status callback's message: one the bot sent
    watch = LogWatch(caplog)
    phones = iter(range(10**6))

    async def check(case: Webhook) -> None:
        path, fields = case
        watch.mark()
        sender = f"+22507{next(phones):08d}"
        if path == "/twilio/status":
            status, _ = await h.post_form(path, {"MessageSid": sid, "MessageStatus": "sent",
                                                 "AccountSid": h.settings.twilio_account_sid, **fields})
        else:
            status, _ = await h.inbound(sender, "Bonjour", extra=fields)
        watch.check(status, case)

    await play(WEBHOOKS, check, examples=[("/twilio/inbound", {"Body": "\x00²", "ProfileName": "\x00"}),
                                          ("/twilio/status", {"MessageStatus": "\x00"})])
    await h.settle()  # what was taken is answered by the workers, also without a traceback
    no_traceback(caplog.records)


# --- the operator's console ----------------------------------------------------------------------

COMMANDS = (("users", "show", "{}"), ("users", "set-mode", "{}", "child"),
            ("users", "set-level", PHONE, "{}"), ("users", "set-timezone", PHONE, "{}"),
            ("users", "credit", PHONE, "{}"),
            ("users", "credit", PHONE, "5", "--reason", "{}"), ("cohorts", "create", "{}"),
            ("cohorts", "show", "{}"), ("operators", "add", "{}", "--role", "admin"),
            ("operators", "add", "prof@ecole.ci", "--role", "teacher", "--cohort", "{}"),
            ("operators", "remove", "{}"))
# An argument as the shell hands it over: text, or bytes that are not UTF-8 (Python reads them as
# lone surrogates). No NUL: no program's arguments can hold one.
ARGUMENTS = st.one_of(odd_text(), odd_bytes().map(os.fsdecode)).map(lambda a: a.replace("\x00", ""))
Command = tuple[tuple[str, ...], str]


async def test_the_console_answers_odd_arguments_with_one_clear_line(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)

    async def check(case: Command) -> None:
        template, argument = case
        run = await console(h, *(argument if part == "{}" else part for part in template))
        assert "Traceback" not in run.err and '"level":"error"' not in run.err, (case, run)
        assert run.code in (0, 1, 2), (case, run)
        not_text = any("\ud800" <= c <= "\udfff" for c in argument)  # bytes that were not UTF-8
        if run.code:
            # The school's commands speak the operator's language (DEFAULT_LANGUAGE, French here);
            # `users`, and an argument the command line's parser refused before any command, English.
            parser = run.err.startswith("error: python -m bot")
            french = template[0] != "users" and not not_text and not parser
            assert run.err.startswith("erreur : " if french else "error: "), (case, run)
        if not_text:
            assert run.code == 2 and "UTF-8" in run.err, (case, run)

    await play(st.tuples(st.sampled_from(COMMANDS), ARGUMENTS), check, max_examples=50, examples=[
        (COMMANDS[6], os.fsdecode(b"6e \xff")), (COMMANDS[0], os.fsdecode(b"+225\xb2")),
        (COMMANDS[4], "²"), (COMMANDS[8], os.fsdecode(b"a\xe9@ecole.ci"))])
