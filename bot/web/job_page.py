"""The live progress page of a background job: GET /jobs/{id}?sig=… (HTML) and
GET /jobs/{id}/events?sig=… (server-sent events, bot.web.job_stream, whose ROUTES
bot/cli.py mounts).

The link (bot.channel.links.job_page_url) is sent with STATUT, the long-work note and the job's
answer; its `sig` opens that one job until it expires. The page is rendered whole on the server
from bot/templates/job/ (bot.render; it also works with script off, refreshing itself), then a few
lines of inline script follow the event stream and grow the timeline in place (bot.web.job_stream
serves the stream).

Everything from the user or the model is escaped; the script only sets `textContent`. The CSP
allows this page's own inline style and script (a nonce per response) and the stream, nothing else.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from aiohttp import web
from sqlalchemy import select

from bot import jobs
from bot.channel.links import check_job_signature, file_url
from bot.render import render
from bot.services import Services
from bot.storage.models import GenerationJob, User, UserFile
from bot.texts import fr_en

KEEPALIVE_S = 15.0  # a comment line this often keeps proxies and phones from closing the stream
ICONS = {"ok": "✅", "error": "❌", "open": "⏳"}
NO_REFRESH_S = 20  # the page's own refresh when script is off

TEXTS: dict[str, dict[str, Any]] = {
    "fr": {
        "title": "La demande", "steps": "Étapes", "empty": "Ça démarre…", "result": "Résultat",
        "files": "Fichiers", "live": "Cette page se met à jour toute seule.",
        "ended": "C'est terminé. Cette page peut être fermée.", "dec": ",", "kb": "Ko", "mb": "Mo",
        "download": "Télécharger",
        "status": {"queued": "En attente", "running": "En cours", "completed": "Terminé",
                   "failed": "Échec", "cancelled": "Annulé"},
        "icon": {"ok": "terminé", "error": "échec", "open": "en cours"},
    },
    "en": {
        "title": "Your request", "steps": "Steps", "empty": "Starting…", "result": "Result",
        "files": "Files", "live": "This page updates by itself.",
        "ended": "All done. You can close this page.", "dec": ".", "kb": "KB", "mb": "MB",
        "download": "Download",
        "status": {"queued": "Waiting", "running": "Working", "completed": "Done",
                   "failed": "Failed", "cancelled": "Cancelled"},
        "icon": {"ok": "done", "error": "failed", "open": "working"},
    },
}


# --- what the events say: the same reading as the page's script ------------------------------


@dataclass
class Step:
    key: str  # "n:call_id" of its tool_start
    call_id: str
    name: str
    label: str
    result: str | None = None  # None while it runs, then "ok" or "error"
    duration_ms: int | None = None
    note: str = ""


@dataclass
class PageState:
    status: str
    note: str = ""
    steps: list[Step] = field(default_factory=list)
    file_ids: list[int] = field(default_factory=list)
    text: str | None = None
    done: bool = False
    last_id: int = 0


def _step_for(state: PageState, event: dict[str, Any]) -> Step:
    """The line an event belongs to: a start by its n and call id; an end by its call id (the
    latest still open first, since some models number their calls afresh in each response)."""
    call_id = str(event.get("call_id") or "")
    name = str(event.get("name") or "")
    key = f"{event.get('n', '')}:{call_id}"
    if event["type"] == "tool_start" or "n" in event:
        found = [s for s in state.steps if s.key == key]
    else:
        same = [s for s in state.steps if s.call_id == call_id]
        found = [s for s in same if s.result is None] or same
    if found:
        return found[-1]
    step = Step(key=key, call_id=call_id, name=name, label=str(event.get("label") or name))
    state.steps.append(step)
    return step


def apply_event(state: PageState, event: dict[str, Any]) -> None:
    kind = event.get("type")
    state.last_id = max(state.last_id, int(event.get("id") or 0))
    if kind in ("tool_start", "tool_end"):
        step = _step_for(state, event)
        step.label = str(event.get("label") or step.label or step.name)
        if kind == "tool_end":
            step.result = "ok" if event.get("status") == "ok" else "error"
            if isinstance(event.get("duration_ms"), int | float):
                step.duration_ms = int(event["duration_ms"])
    elif kind == "tool_progress":
        open_steps = [s for s in state.steps if s.result is None]
        named = [s for s in open_steps if s.name == event.get("name")] or open_steps
        if named:
            named[-1].note = str(event.get("note") or "")
    elif kind == "status":
        state.status = str(event.get("status") or state.status)
        state.note = str(event.get("note") or "")
    elif kind == "file" and isinstance(event.get("file_id"), int):
        if event["file_id"] not in state.file_ids:
            state.file_ids.append(event["file_id"])
    elif kind == "done":
        state.status = str(event.get("status") or state.status)
        state.text = str(event.get("text") or "") or state.text
        state.done = True
        for step in state.steps:
            if step.result is None:
                step.result = "ok" if state.status == "completed" else "error"


def page_state(job: GenerationJob, events: list[dict[str, Any]]) -> PageState:
    state = PageState(status=job.status)
    for event in events:
        apply_event(state, event)
    for file_id in job.result_files or []:
        if isinstance(file_id, int) and file_id not in state.file_ids:
            state.file_ids.append(file_id)
    if job.status in jobs.ENDED:  # the row is the truth; its last events may still be on their way
        state.status = job.status
        state.text = state.text if state.text is not None else job.result_text
    return state


def duration_text(ms: int, lang: str) -> str:
    seconds = ms / 1000
    if seconds < 10:
        return f"{seconds:.1f} s".replace(".", TEXTS[lang]["dec"])
    whole = int(seconds + 0.5)  # halves up, as the script's Math.round
    if seconds < 60:
        return f"{whole} s"
    minutes, rest = divmod(whole, 60)
    return f"{minutes} min {rest:02d} s"


def size_text(size: int, lang: str) -> str:
    """« 12 Ko · Télécharger »: under the file's name, so the link reads as a download."""
    t = TEXTS[lang]
    if size < 1024 * 1024:
        amount = f"{max(1, round(size / 1024))} {t['kb']}"
    else:
        amount = f"{size / (1024 * 1024):.1f} {t['mb']}".replace(".", t["dec"])
    return f"{amount} · ⬇️ {t['download']}"


# --- access -----------------------------------------------------------------------------------


def language_of(user: User | None) -> str:
    return fr_en(user.language if user is not None else None, "fr", "en")


def headers(nonce: str | None) -> dict[str, str]:
    """No caching, no sniffing, no referrer (the sig is in the URL), and only this response's own
    inline style and script plus the stream of this origin."""
    own = f"'nonce-{nonce}'" if nonce else "'none'"
    return {
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Robots-Tag": "noindex",
        "Content-Security-Policy": (
            f"default-src 'none'; script-src {own}; style-src {own}; connect-src 'self'; "
            "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        ),
    }


def short_page(status: int, reason: str) -> web.Response:
    """The page said instead of the job's: `denied` (403), `missing` (404) or `busy` (429)."""
    nonce = secrets.token_urlsafe(16)
    body = render("job/short.html", nonce=nonce, reason=reason)
    return web.Response(status=status, text=body, content_type="text/html", headers=headers(nonce))


async def authorised_job(request: web.Request) -> tuple[Services, GenerationJob, User | None] | web.Response:
    """The job the link opens, with its owner; else the 403 (bad or expired sig) or 404 page."""
    from bot.channel.app_keys import services_of

    services = services_of(request)
    job_id = check_job_signature(services.settings, request.match_info["id"], request.query.get("sig", ""))
    if job_id is None:
        return short_page(403, "denied")
    async with services.sessions() as db:
        job = await db.get(GenerationJob, job_id)
        user = await db.get(User, job.user_id) if job is not None else None
    if job is None:
        return short_page(404, "missing")
    return services, job, user


def ended_unannounced(services: Services, job: GenerationJob) -> bool:
    """True when the row says ended a while ago and no `done` came: the stream and page then stop
    waiting (a `done` recorded just after the status still wins within KEEPALIVE_S)."""
    if job.status not in jobs.ENDED:
        return False
    finished = job.finished_at or job.created_at
    return finished is None or services.clock() - finished > timedelta(seconds=KEEPALIVE_S)


async def job_files(services: Services, job: GenerationJob, ids: list[int]) -> list[UserFile]:
    if not ids:
        return []
    async with services.sessions() as db:
        rows = (await db.scalars(select(UserFile).where(UserFile.id.in_(ids),
                                                        UserFile.user_id == job.user_id))).all()
    by_id = {row.id: row for row in rows}
    return [by_id[i] for i in ids if i in by_id]


# --- the page: bot/templates/job/ (page.html, its page.css and page.js inline) -------------------


def render_page(services: Services, job: GenerationJob, state: PageState, files: list[UserFile],
                lang: str, events_src: str) -> tuple[str, str]:
    """The page's HTML and the nonce of its style and script."""
    t, nonce = TEXTS[lang], secrets.token_urlsafe(16)
    ended = state.done or ended_unannounced(services, job)
    status = state.status if state.status in t["status"] else "running"
    cfg = {"last": state.last_id, "src": events_src, "ended_now": ended, "dec": t["dec"],
           "retry": services.settings.sse_refused_retry_ms, "status": t["status"], "icons": ICONS,
           "iconText": t["icon"], "ended": t["ended"]}
    steps = [(s, duration_text(s.duration_ms, lang) if s.duration_ms is not None else "")
             for s in state.steps]
    links = [(file_url(services.settings, row, read_later=True), row, size_text(row.size, lang))
             for row in files]
    body = render("job/page.html", lang=lang, nonce=nonce, t=t, icons=ICONS, cfg=cfg, ended=ended,
                  refresh_s=NO_REFRESH_S, request=job.request or "", status=status, note=state.note,
                  steps=steps, text=state.text or "", files=links)
    return body, nonce


async def job_page(request: web.Request) -> web.Response:
    found = await authorised_job(request)
    if isinstance(found, web.Response):
        return found
    services, job, user = found
    lang = language_of(user)
    async with services.sessions() as db:
        stored = await jobs.events(db, job.id)
    state = page_state(job, stored)
    files = await job_files(services, job, state.file_ids)
    src = f"/jobs/{job.id}/events?sig={request.query.get('sig', '')}"
    body, nonce = render_page(services, job, state, files, lang, src)
    return web.Response(text=body, content_type="text/html", headers=headers(nonce))
