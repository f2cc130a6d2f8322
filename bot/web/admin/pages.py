"""The dashboard's routes: the login and logout, the overview, a class, a student, the class's CSV
exports, the open safety flags and one flag's page (a person reads the child's messages, writes to
the child, holds the conversation: follow_up.py). Every route but the login's (and the bare
/admin's redirect) is behind one hook, `signed_in`: it needs a session (else 303 to the login), on
a POST its CSRF token (else 403), and hands the handler its viewer and, on a POST, the form it
read. What is outside a teacher's classes answers 404."""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import re
import secrets
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

from aiohttp import web

from bot import logs, safety, school
from bot.channel.malformed import read_form
from bot.learning import subject_name
from bot.safety import open_line
from bot.services import Services
from bot.web.admin import auth, classes, exports, flags, follow_up, funding, queries, throttle, uploads
from bot.web.admin.dashboard_charts import messages_chart, results_chart
from bot.web.admin.texts import language_of, translator
from bot.web.clients import client_of
from bot.web.render import html_response

log = logging.getLogger("bot.web.admin")


def _services(request: web.Request) -> Services:
    from bot.channel.app_keys import services_of
    return services_of(request)


def _page(request: web.Request, template: str, *, status: int = 200, **context: Any) -> web.Response:
    lang = language_of(request)
    # Every date in the school's time zone: DEFAULT_TIMEZONE (a deployment serves one school system).
    return html_response(f"admin/{template}", status=status, lang=lang, t=translator(lang),
                         zone=_services(request).settings.default_timezone, quote=quote, **context)


def _to_login() -> web.Response:
    return web.HTTPSeeOther(auth.LOGIN_PATH)


def _not_found(request: web.Request, viewer: auth.Viewer) -> web.Response:
    return _page(request, "message.html", status=404, viewer=viewer, title_key="not_found")


async def _form(request: web.Request) -> dict[str, str]:
    return await read_form(request, auth.FORM_MAX_BYTES)  # odd bytes in a field: 400 (bot.channel.malformed)


# --- the hook every other route passes through --------------------------------------------------

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ViewerHandler = Callable[[web.Request, auth.Viewer], Awaitable[web.StreamResponse]]
SIGNED_IN = "signed_in"  # the attribute that marks a handler behind the hook (tests/admin checks it)
FORM = web.RequestKey("admin_form", dict[str, str])  # the form the hook read (a body is read once)
FILES = web.RequestKey("admin_files", dict[str, uploads.Upload])  # and a multipart form's files


async def _posted_form(request: web.Request) -> dict[str, str]:
    """A POST's form: urlencoded, or multipart when the page sends a file (its files kept in FILES)."""
    if request.content_type != uploads.MULTIPART:
        request[FILES] = {}
        return await _form(request)
    form, request[FILES] = await uploads.read_multipart(request)
    return form


def signed_in(handler: ViewerHandler) -> Handler:
    """The route's handler, behind the session and, on a POST, the form's CSRF token; it gets the
    viewer, and the form as `posted(request)`. Without a session: 303 to the login. A POST without
    its token: 403."""

    @functools.wraps(handler)
    async def guarded(request: web.Request) -> web.StreamResponse:
        viewer = await auth.viewer_of(_services(request), request)
        if viewer is None:
            return _to_login()
        form = await _posted_form(request) if request.method == "POST" else {}
        if request.method == "POST" and not auth.csrf_ok(viewer, form.get("csrf_token", "")):
            return _page(request, "message.html", status=403, viewer=None, title_key="forbidden")
        request[FORM] = form
        return await handler(request, viewer)

    setattr(guarded, SIGNED_IN, True)
    return guarded


# --- login and logout ---------------------------------------------------------------------------


def _login_page(request: web.Request, services: Services, *, status: int = 200,
                error: str | None = None, wait: str = "") -> web.Response:
    token = auth.new_login_token(services)
    resp = _page(request, "login.html", status=status, csrf_token=token, error=error, wait=wait, viewer=None)
    auth.set_login_cookie(services, resp, token)
    return resp


def _throttled(request: web.Request, services: Services, client: str, wait_s: float) -> web.Response:
    """429, saying how long to wait. Anyone can cause it: logged at most once in a while."""
    logs.warning_sampled(log, "dashboard login throttled", {"client": client})
    seconds = math.ceil(wait_s)
    wait = f"{seconds} s" if seconds < 120 else f"{math.ceil(seconds / 60)} min"
    resp = _login_page(request, services, status=429, error="throttled", wait=wait)
    resp.headers["Retry-After"] = str(seconds)
    return resp


async def login_form(request: web.Request) -> web.Response:
    services = _services(request)
    if await auth.viewer_of(services, request) is not None:
        return web.HTTPSeeOther("/admin/")
    return _login_page(request, services)


async def login_post(request: web.Request) -> web.Response:
    services = _services(request)
    form = await _form(request)
    if not auth.login_token_valid(services, request.cookies.get(auth.LOGIN_CSRF_COOKIE, ""),
                                  form.get("csrf_token", "")):
        return _page(request, "message.html", status=403, viewer=None, title_key="forbidden")
    email = form.get("email", "").strip().lower()[:320]
    client = client_of(request, services.settings.trusted_proxies)
    wait_s = await throttle.take_attempt(services.state, email, client)
    if wait_s:
        return _throttled(request, services, client, wait_s)
    operator = await auth.check_password(services, email, form.get("password", "")[:1024])
    if operator is None:
        return _login_page(request, services, status=401, error="bad_login")
    await throttle.logged_in(services.state, email, client)
    resp = web.HTTPSeeOther("/admin/")
    await auth.open_session(services, operator.id, resp)
    return resp


@signed_in
async def logout_post(request: web.Request, viewer: auth.Viewer) -> web.Response:
    resp = web.HTTPSeeOther(auth.LOGIN_PATH)
    await auth.close_session(_services(request), request, resp)
    return resp


# --- pages --------------------------------------------------------------------------------------


@signed_in
async def overview_page(request: web.Request, viewer: auth.Viewer) -> web.Response:
    services = _services(request)
    language = language_of(request)
    t = translator(language)
    async with services.sessions() as db:
        view = await queries.overview(db, services.settings, viewer, services.clock())
    chart = ""
    if view.operations is not None:
        chart = await asyncio.to_thread(messages_chart, tuple(view.operations.days), t("messages_per_day"),
                                        (t("inbound"), t("outbound")))
    return _page(request, "overview.html", viewer=viewer, view=view, chart=chart,
                 flags_line=open_line(view.flags, services.clock(), language))


async def _cohort_page(request: web.Request, viewer: auth.Viewer, *, status: int = 200, notice: str = "",
                       fund_form: dict[str, str] | None = None, problem: str = "",
                       form: dict[str, str] | None = None, files_problem: str = "") -> web.Response:
    """The class's page; with `fund_form`, an admin's funding form applied first (once per nonce);
    `problem` and `form`: an assignment form sent back with what is wrong; `files_problem`: the
    library's form's."""
    services = _services(request)
    async with services.sessions() as db:
        cohort = await classes.cohort_for(db, viewer, request.match_info["name"])
        if cohort is None:
            return _not_found(request, viewer)
        if fund_form is not None:
            funded = await funding.fund(db, services, cohort, fund_form, viewer.email)
            await db.commit()
            status, notice = funded.status, funded.notice
        view = await classes.class_view(db, cohort, services.clock())
        pool_use = await funding.pool_use(db, cohort, services)
        bank = await school.bank_counts(db, cohort.id)
        homework = await school.class_assignments(db, cohort.id, language_of(request))
        class_files = await school.class_files(db, cohort.id)
        # What the class costs, to whoever sees what the school pays: the admins.
        costs = (await classes.class_costs(db, services.settings, cohort.id, services.clock())
                 if viewer.is_admin else None)
    return _page(request, "cohort.html", status=status, viewer=viewer, view=view, pool=pool_use, costs=costs,
                 class_files=class_files, files_problem=files_problem, notice=notice,
                 nonce=secrets.token_urlsafe(24), bank=bank,
                 daily_cap=services.settings.class_pool_daily_cap, fund_max=funding.MAX_FUND,
                 homework=homework, problem=problem, form=form or {}, questions_max=school.QUESTIONS_MAX)


@signed_in
async def cohort_page(request: web.Request, viewer: auth.Viewer) -> web.Response:
    return await _cohort_page(request, viewer)


@signed_in
async def cohort_fund(request: web.Request, viewer: auth.Viewer) -> web.Response:
    """An admin puts credits in the class's pool; a teacher gets 404, as for a page not theirs."""
    if not viewer.is_admin:
        return _not_found(request, viewer)
    wait_s = await throttle.take_action(_services(request).state, "fund", viewer.operator_id)
    if wait_s:
        logs.warning_sampled(log, "dashboard funding throttled", {"operator_id": viewer.operator_id})
        resp = await _cohort_page(request, viewer, status=429, notice="throttled")
        resp.headers["Retry-After"] = str(math.ceil(wait_s))
        return resp
    return await _cohort_page(request, viewer, fund_form=posted(request))


@signed_in
async def cohort_assign(request: web.Request, viewer: auth.Viewer) -> web.Response:
    """Homework to the class (bot.school.assignments): the notices go through the scheduled sends;
    a bad form is the page again with its one line, nothing stored."""
    services, form, lang = _services(request), posted(request), language_of(request)
    async with services.sessions() as db:
        if await classes.cohort_for(db, viewer, request.match_info["name"]) is None:
            return _not_found(request, viewer)
    wait_s = await throttle.take_action(services.state, "assign", viewer.operator_id)
    if wait_s:
        wait = f"{math.ceil(wait_s)} s" if wait_s < 120 else f"{math.ceil(wait_s / 60)} min"
        return await _cohort_page(request, viewer, status=429, form=form,
                                  problem=translator(lang)("assign_throttled").format(wait=wait))
    now = services.clock()
    try:
        questions = int(form.get("questions") or "5")
    except ValueError:
        return await _cohort_page(request, viewer, status=400, form=form,
                                  problem=translator(lang)("not_number"))
    try:
        async with services.sessions() as db:
            cohort = await classes.cohort_for(db, viewer, request.match_info["name"])
            assert cohort is not None  # looked at above; a class is not renamed under a form
            today = school.local_today(now, services.settings.default_timezone)
            due = school.parse_due(form.get("due"), today, lang)
            await school.assign(db, cohort, skill=form.get("skill", ""), questions=questions, due_on=due,
                                created_by=viewer.email, now=now, language=lang)
            await db.commit()
    except school.AssignmentError as exc:
        return await _cohort_page(request, viewer, status=400, form=form, problem=str(exc))
    return web.HTTPSeeOther(f"/admin/cohorts/{quote(request.match_info['name'], safe='')}#assignments")


def _filename(name: str, what: str) -> str:
    return f"{re.sub(r'[^A-Za-z0-9_-]+', '_', name)[:60] or 'class'}-{what}.csv"


@signed_in
async def cohort_csv(request: web.Request, viewer: auth.Viewer) -> web.Response:
    services = _services(request)
    what = request.match_info["what"]
    dialect = exports.dialect_of(language_of(request), services.settings.default_timezone)
    async with services.sessions() as db:
        cohort = await classes.cohort_for(db, viewer, request.match_info["name"])
        if cohort is None:
            return _not_found(request, viewer)
        if what == "roster":  # with a column per assignment: each student's score
            students = await classes.roster(db, cohort.id)
            homework = await school.class_assignments(db, cohort.id, language_of(request))
            text = exports.csv_text(*exports.with_homework(exports.roster_rows(students, dialect), students,
                                                           homework), dialect)
        else:
            results = await classes.results_rows(db, cohort.id, dialect.time)
            text = exports.csv_text(exports.RESULTS_HEADER, results, dialect)
    return exports.csv_response(_filename(cohort.name, what), text, dialect)


@signed_in
async def student_page(request: web.Request, viewer: auth.Viewer) -> web.Response:
    services = _services(request)
    t = translator(language_of(request))
    async with services.sessions() as db:
        found = await classes.student_for(db, viewer, int(request.match_info["id"]))
        if found is None:
            return _not_found(request, viewer)
        view = await classes.student_view(db, *found, services.settings.learning, services.clock())
    chart = await asyncio.to_thread(results_chart, tuple(view.weeks), t("results_over_time"),
                                    (t("right"), t("wrong")))
    return _page(request, "student.html", viewer=viewer, view=view, chart=chart, subject_name=subject_name)


def posted(request: web.Request) -> dict[str, str]:
    """The form of a POST, as the hook read it."""
    return request[FORM]


async def _cohort_action(request: web.Request, viewer: auth.Viewer, what: str) -> tuple[Any, float]:
    """The route's class if the viewer may see it (else None, nothing counted), and the seconds to
    wait before `what` may be done again by them (0: now; throttle.take_action counted it)."""
    services = _services(request)
    async with services.sessions() as db:
        cohort = await classes.cohort_for(db, viewer, request.match_info["name"])
    if cohort is None:
        return None, 0.0
    return cohort, await throttle.take_action(services.state, what, viewer.operator_id)


@signed_in
async def cohort_items(request: web.Request, viewer: auth.Viewer) -> web.Response:
    """A teacher's questions file for the class: the problems by line (nothing stored), or how many
    were added; at most throttle.UPLOADS_FREE files per operator in UPLOADS_WINDOW_S."""
    services = _services(request)
    cohort, wait_s = await _cohort_action(request, viewer, "items")
    if cohort is None:
        return _not_found(request, viewer)
    if wait_s:
        resp = _page(request, "items.html", status=429, viewer=viewer, cohort=cohort, result=None)
        resp.headers["Retry-After"] = str(math.ceil(wait_s))
        return resp
    result = await uploads.import_items(services, cohort, request[FILES].get("file"), language_of(request))
    return _page(request, "items.html", status=422 if result.problems else 200, viewer=viewer, cohort=cohort,
                 result=result)


@signed_in
async def cohort_files(request: web.Request, viewer: auth.Viewer) -> web.Response:
    """A file for the class's library (bot.school.class_files): stored and indexed once, read by the
    class's students; at most ACTION_LIMITS["files"] per operator in the window."""
    services, t = _services(request), translator(language_of(request))
    cohort, wait_s = await _cohort_action(request, viewer, "files")
    if cohort is None:
        return _not_found(request, viewer)
    if wait_s:
        resp = await _cohort_page(request, viewer, status=429, files_problem=t("files_throttled"))
        resp.headers["Retry-After"] = str(math.ceil(wait_s))
        return resp
    upload = request[FILES].get("file")
    if upload is None or not upload.data:
        return await _cohort_page(request, viewer, status=422, files_problem=t("files_chosen"))
    await school.add_class_file(services, cohort, upload.filename, upload.data)
    return web.HTTPSeeOther(f"/admin/cohorts/{quote(request.match_info['name'], safe='')}#files")


@signed_in
async def flags_page(request: web.Request, viewer: auth.Viewer) -> web.Response:
    services = _services(request)
    async with services.sessions() as db:
        shown = await flags.open_flags(db, viewer)
    return _page(request, "flags.html", viewer=viewer, flags=shown,
                 may_follow=follow_up.may_follow(viewer, services.settings))


# --- one flag: a person reads, writes to the child, holds the conversation ---------------------

NONCE = re.compile(r"[A-Za-z0-9_-]{16,64}")
# What the page says of a message not sent, and its status: never 200, nothing claims it went.
NOT_SENT = {"window_closed": 409, "opted_out": 409, "gone": 404, "empty": 422, "too_long": 422}


async def _flag_page(request: web.Request, viewer: auth.Viewer, *, status: int = 200, notice: str = "",
                     reason: str = "", draft: str = "") -> web.Response:
    """The flag's page, its reading recorded; 404 outside what the viewer may follow up."""
    services = _services(request)
    async with services.sessions() as db, db.begin():
        flag = await follow_up.flag_for(db, viewer, services.settings, int(request.match_info["id"]))
        if flag is None:
            return _not_found(request, viewer)
        follow_up.read(db, flag.id, viewer, services.clock())
        view = await follow_up.page(db, services, flag)
    return _page(request, "flag.html", status=status, viewer=viewer, view=view, notice=notice, reason=reason,
                 draft=draft, nonce=secrets.token_urlsafe(24), reply_max=safety.REPLY_MAX)


@signed_in
async def flag_page(request: web.Request, viewer: auth.Viewer) -> web.Response:
    return await _flag_page(request, viewer)


async def _may_follow(request: web.Request, viewer: auth.Viewer) -> bool:
    services = _services(request)
    async with services.sessions() as db:
        flag = await follow_up.flag_for(db, viewer, services.settings, int(request.match_info["id"]))
    return flag is not None


@signed_in
async def flag_reply(request: web.Request, viewer: auth.Viewer) -> web.Response:
    """Writes the person's text to the child; the page then says whether Twilio took it."""
    if not await _may_follow(request, viewer):
        return _not_found(request, viewer)
    form = posted(request)
    text, nonce = form.get("text", "").strip(), form.get("nonce", "")
    if not NONCE.fullmatch(nonce):
        return _page(request, "message.html", status=403, viewer=None, title_key="forbidden")
    reason = "empty" if not text else "too_long" if len(text) > safety.REPLY_MAX else None
    if reason is None:
        flag_id = int(request.match_info["id"])
        written = await safety.write_to_child(_services(request), flag_id, follow_up.person(viewer), text,
                                              f"school:{flag_id}:{nonce}")
        if written.sent:
            return await _flag_page(request, viewer, notice="sent")
        reason = written.reason or "failed"
    return await _flag_page(request, viewer, status=NOT_SENT.get(reason, 502),
                            notice=reason if reason in NOT_SENT else "failed", reason=reason, draft=text)


async def _hold_action(request: web.Request, viewer: auth.Viewer, take: bool) -> web.Response:
    services = _services(request)
    now = services.clock()
    async with services.sessions() as db, db.begin():
        flag = await follow_up.flag_for(db, viewer, services.settings, int(request.match_info["id"]))
        if flag is None:
            return _not_found(request, viewer)
        if take:
            safety.take(db, flag, follow_up.person(viewer), now, services.settings.safety.human_hold_s)
        elif flag.held_at is not None:  # pressed twice, or after the hold lapsed: nothing to hand back
            await safety.release(db, flag, follow_up.person(viewer), now)
    return web.HTTPSeeOther(f"/admin/flags/{flag.id}")


@signed_in
async def flag_take(request: web.Request, viewer: auth.Viewer) -> web.Response:
    return await _hold_action(request, viewer, take=True)


@signed_in
async def flag_release(request: web.Request, viewer: auth.Viewer) -> web.Response:
    return await _hold_action(request, viewer, take=False)


@signed_in
async def acknowledge_post(request: web.Request, viewer: auth.Viewer) -> web.Response:
    services = _services(request)
    async with services.sessions() as db, db.begin():
        found = await flags.acknowledge(db, viewer, int(request.match_info["id"]), services.clock())
    if not found:
        return _not_found(request, viewer)
    return web.HTTPSeeOther("/admin/flags")


async def to_dashboard(request: web.Request) -> web.Response:
    return web.HTTPSeeOther("/admin/")


ID = r"{id:[1-9][0-9]{0,17}}"
ROUTES = [
    web.get("/admin", to_dashboard),
    web.get("/admin/login", login_form),
    web.post("/admin/login", login_post),
    web.post("/admin/logout", logout_post),
    web.get("/admin/", overview_page),
    web.get("/admin/flags", flags_page),
    web.post(f"/admin/flags/{ID}/acknowledge", acknowledge_post),
    web.get(f"/admin/flags/{ID}", flag_page),
    web.post(f"/admin/flags/{ID}/reply", flag_reply),
    web.post(f"/admin/flags/{ID}/take", flag_take),
    web.post(f"/admin/flags/{ID}/release", flag_release),
    web.get("/admin/cohorts/{name}", cohort_page),
    web.post("/admin/cohorts/{name}/fund", cohort_fund),
    web.post("/admin/cohorts/{name}/assign", cohort_assign),
    web.get("/admin/cohorts/{name}/{what:roster|results}.csv", cohort_csv),
    web.post("/admin/cohorts/{name}/items", cohort_items),
    web.post("/admin/cohorts/{name}/files", cohort_files),
    web.get(f"/admin/students/{ID}", student_page),
]
