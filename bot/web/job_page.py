"""The live progress page of a background job: GET /jobs/{id}?sig=… (HTML) and
GET /jobs/{id}/events?sig=… (server-sent events, bot.web.job_stream, whose ROUTES
bot/cli.py mounts).

The link (bot.channel.links.job_page_url) is sent with STATUT, the long-work note and the job's
answer; its `sig` opens that one job until it expires. The page is rendered whole on the server
(it also works with script off, refreshing itself), then a few lines of inline script follow the
event stream and grow the timeline in place (bot.web.job_stream serves the stream).

Everything from the user or the model is escaped; the script only sets `textContent`. The CSP
allows this page's own inline style and script (a nonce per response) and the stream, nothing else.
"""

from __future__ import annotations

import html
import json
import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from string import Template
from typing import Any

from aiohttp import web
from sqlalchemy import select

from bot import jobs
from bot.channel.links import check_job_signature, file_url
from bot.services import Services
from bot.storage.models import GenerationJob, User, UserFile
from bot.texts import fr_en

KEEPALIVE_S = 15.0  # a comment line this often keeps proxies and phones from closing the stream
ICONS = {"ok": "✅", "error": "❌", "open": "⏳"}
NO_REFRESH_S = 20  # the page's own refresh when script is off

TEXTS: dict[str, dict[str, Any]] = {
    "fr": {
        "title": "Ta demande", "steps": "Étapes", "empty": "Ça démarre…", "result": "Résultat",
        "files": "Fichiers", "live": "Cette page se met à jour toute seule.",
        "ended": "C'est terminé. Tu peux fermer cette page.", "dec": ",", "kb": "Ko", "mb": "Mo",
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


_SHORT_PAGE = Template("""<!doctype html><html lang="fr"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>Deblo</title>
<style nonce="$nonce">body{font:17px/1.5 system-ui,sans-serif;margin:2em auto;
max-width:32em;padding:0 16px;color:#111827}</style></head><body><h1>Deblo</h1><p>$fr</p>
<p lang="en">$en</p></body></html>""")


def short_page(status: int, fr: str, en: str) -> web.Response:
    nonce = secrets.token_urlsafe(16)
    body = _SHORT_PAGE.substitute(nonce=nonce, fr=html.escape(fr, quote=False),
                                  en=html.escape(en, quote=False))
    return web.Response(status=status, text=body, content_type="text/html", headers=headers(nonce))


async def authorised_job(request: web.Request) -> tuple[Services, GenerationJob, User | None] | web.Response:
    """The job the link opens, with its owner; else the 403 (bad or expired sig) or 404 page."""
    from bot.channel.app_keys import services_of

    services = services_of(request)
    job_id = check_job_signature(services.settings, request.match_info["id"], request.query.get("sig", ""))
    if job_id is None:
        return short_page(403, "Ce lien n'est pas valide ou a expiré. "
                               "Écris STATUT pour en recevoir un nouveau.",
                          "This link is invalid or has expired. Send STATUS to get a new one.")
    async with services.sessions() as db:
        job = await db.get(GenerationJob, job_id)
        user = await db.get(User, job.user_id) if job is not None else None
    if job is None:
        return short_page(404, "Cette demande n'existe pas ou a été effacée.",
                          "This request does not exist or was deleted.")
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


# --- the page ---------------------------------------------------------------------------------

CSS = """*{box-sizing:border-box}html{-webkit-text-size-adjust:100%}
body{margin:0;background:#eef1f5;color:#111827;font:17px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,
"Noto Sans",sans-serif;overflow-wrap:anywhere}
main{max-width:40rem;margin:0 auto;padding:12px}
.brand{margin:4px 4px 10px;font-weight:700;color:#0f5132;font-size:1.05rem}
.card{background:#fff;border-radius:12px;padding:14px 16px;margin:0 0 12px;
box-shadow:0 1px 3px rgba(0,0,0,.1)}
h1,h2{margin:0 0 8px;line-height:1.25}h1{font-size:1.2rem}h2{font-size:1.05rem;color:#374151}
.req,.final{white-space:pre-wrap;margin:0}.req{color:#1f2937}
.state{margin:12px 0 0}.badge{display:inline-block;padding:2px 12px;border-radius:999px;font-weight:600}
.queued{background:#e5e7eb;color:#1f2937}.running{background:#dbeafe;color:#1e3a8a}
.completed{background:#d1fae5;color:#064e3b}.failed{background:#fee2e2;color:#7f1d1d}
.cancelled{background:#fef3c7;color:#78350f}
#note{display:block;color:#4b5563;font-size:.95rem;margin-top:4px}
ol,ul{list-style:none;margin:0;padding:0}
.step{display:grid;grid-template-columns:1.7em 1fr auto;gap:2px 8px;padding:9px 0;
border-top:1px solid #e5e7eb}
.step:first-child{border-top:0}.ic{text-align:center}
.du{color:#4b5563;white-space:nowrap;font-variant-numeric:tabular-nums}
.nt{grid-column:2/4;color:#4b5563;font-size:.92rem}.nt:empty{display:none}
.files{margin-top:12px}.files a{display:block;padding:11px 14px;margin-top:8px;border-radius:10px;
background:#eff6ff;border:1px solid #bfdbfe;color:#1d4ed8;font-weight:600;text-decoration:none}
.sz{display:block;color:#4b5563;font-weight:400;font-size:.9rem}
.foot{color:#4b5563;font-size:.92rem;text-align:center;margin:8px 0 20px}[hidden]{display:none!important}"""

# Reads the stream and grows the page in place, as apply_event reads the events on the server.
# Only textContent is set: what the events carry is never parsed as HTML.
SCRIPT = """(function () {
  "use strict";
  var C = JSON.parse(document.getElementById("cfg").textContent), last = C.last;
  var q = function (id) { return document.getElementById(id); }, tl = q("tl");
  function el(tag, cls, text) {
    var e = document.createElement(tag); if (cls) e.className = cls;
    if (text) e.textContent = text; return e;
  }
  function part(li, cls) { return li.querySelector("." + cls); }
  function rows() { return Array.prototype.slice.call(tl.children); }
  function dur(ms) {
    var s = ms / 1000;
    if (s < 10) return s.toFixed(1).replace(".", C.dec) + " s";
    if (s < 60) return Math.round(s) + " s";
    s = Math.round(s); return Math.floor(s / 60) + " min " + String(s % 60).padStart(2, "0") + " s";
  }
  function mark(li, result) {
    li.classList.remove("open"); li.dataset.r = result;
    var ic = part(li, "ic");
    ic.textContent = C.icons[result]; ic.setAttribute("aria-label", C.iconText[result]);
  }
  function step(e) {
    var cid = String(e.call_id || ""), k = (e.n === undefined ? "" : e.n) + ":" + cid, found;
    if (e.type === "tool_start" || e.n !== undefined) {
      found = rows().filter(function (r) { return r.dataset.k === k; });
    } else {
      var same = rows().filter(function (r) { return r.dataset.c === cid; });
      found = same.filter(function (r) { return !r.dataset.r; });
      if (!found.length) found = same;
    }
    if (found.length) return found[found.length - 1];
    var li = el("li", "step open"), ic = el("span", "ic", C.icons.open);
    ic.setAttribute("role", "img"); ic.setAttribute("aria-label", C.iconText.open);
    li.dataset.k = k; li.dataset.c = cid; li.dataset.name = e.name || "";
    li.append(ic, el("span", "lb", e.label || e.name || ""), el("span", "du"), el("span", "nt"));
    tl.appendChild(li); q("empty").hidden = true; return li;
  }
  function status(s, note) {
    var b = q("st"); b.className = "badge " + s; b.textContent = C.status[s] || s;
    if (note !== undefined) q("note").textContent = note || "";
  }
  function file(e) {
    if (!e.url || document.querySelector('[data-f="' + Number(e.file_id) + '"]')) return;
    var a = el("a", "", e.name || ""), li = el("li");
    a.href = e.url; a.setAttribute("download", ""); a.dataset.f = Number(e.file_id);
    if (e.size_text) a.appendChild(el("span", "sz", e.size_text));
    li.appendChild(a); q("files").appendChild(li);
    q("files").hidden = false; q("result").hidden = false;
  }
  function apply(e) {
    var li;
    if (e.type === "tool_start" || e.type === "tool_end") {
      li = step(e); if (e.label) part(li, "lb").textContent = e.label;
      if (e.type === "tool_end") {
        mark(li, e.status === "ok" ? "ok" : "error");
        if (typeof e.duration_ms === "number") part(li, "du").textContent = dur(e.duration_ms);
      }
    } else if (e.type === "tool_progress") {
      var open = rows().filter(function (r) { return !r.dataset.r; });
      var named = open.filter(function (r) { return r.dataset.name === e.name; });
      li = (named.length ? named : open).pop(); if (li) part(li, "nt").textContent = e.note || "";
    } else if (e.type === "status") { status(e.status, e.note); }
    else if (e.type === "file") { file(e); }
    else if (e.type === "done") {
      if (e.status) status(e.status);
      rows().forEach(function (r) { if (!r.dataset.r) mark(r, e.status === "completed" ? "ok" : "error"); });
      if (e.text) { q("text").textContent = e.text; q("text").hidden = false; q("result").hidden = false; }
      q("foot").textContent = C.ended; es.close();
    }
  }
  if (C.ended_now) return;
  var es;
  function listen() {
    es = new EventSource(C.src);
    es.onmessage = function (m) {
      var e = JSON.parse(m.data);
      if (e.id && e.id <= last) return;
      if (e.id) last = e.id;
      apply(e);
    };
    // A stream the server ended is reopened by the browser itself (with Last-Event-ID); one it
    // refused (429: open too many times) is not, so it is opened again a little later.
    es.onerror = function () { if (es.readyState === 2) setTimeout(listen, C.retry); };
  }
  listen();
})();"""

PAGE = Template("""<!doctype html>
<html lang="$lang"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><meta name="robots" content="noindex">
<link rel="icon" href="data:,">$refresh<title>Deblo · $title</title><style nonce="$nonce">$css</style></head>
<body><main>
<div class="brand">Deblo</div>
<section class="card"><h1>$title</h1><p class="req">$request</p>
<p class="state"><span id="st" class="badge $status">$status_text</span>
<span id="note">$note</span></p></section>
<section class="card"><h2>$steps_title</h2><ol id="tl">$steps</ol>
<p id="empty"$empty_hidden>$empty</p></section>
<section id="result" class="card"$result_hidden><h2>$result_title</h2>
<div id="text" class="final"$text_hidden>$text</div>
<ul id="files" class="files"$files_hidden>$files</ul></section>
<p id="foot" class="foot">$foot</p>
</main>
<script type="application/json" id="cfg">$cfg</script>
<script nonce="$nonce">$script</script>
</body></html>""")


def _hidden(flag: bool) -> str:
    return " hidden" if flag else ""


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element: no `<`, `>` or `&` that could end or open a tag."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _step_html(step: Step, lang: str) -> str:
    result = step.result or "open"
    duration = duration_text(step.duration_ms, lang) if step.duration_ms is not None else ""
    e = html.escape
    classes, done = ("step", f' data-r="{result}"') if step.result else ("step open", "")
    return (f'<li class="{classes}" data-k="{e(step.key)}" data-c="{e(step.call_id)}" '
            f'data-name="{e(step.name)}"{done}>'
            f'<span class="ic" role="img" aria-label="{TEXTS[lang]["icon"][result]}">{ICONS[result]}</span>'
            f'<span class="lb">{e(step.label)}</span><span class="du">{duration}</span>'
            f'<span class="nt">{e(step.note)}</span></li>')


def file_link_html(services: Services, row: UserFile, lang: str) -> str:
    url = file_url(services.settings, row, read_later=True)
    return (f'<li><a href="{html.escape(url)}" download data-f="{row.id}">{html.escape(row.name)}'
            f'<span class="sz">{size_text(row.size, lang)}</span></a></li>')


def render_page(services: Services, job: GenerationJob, state: PageState, files: list[UserFile],
                lang: str, events_src: str) -> tuple[str, str]:
    """The page's HTML and the nonce of its style and script."""
    t, nonce = TEXTS[lang], secrets.token_urlsafe(16)
    ended = state.done or ended_unannounced(services, job)
    status = state.status if state.status in t["status"] else "running"
    cfg = {"last": state.last_id, "src": events_src, "ended_now": ended, "dec": t["dec"],
           "retry": services.settings.sse_refused_retry_ms, "status": t["status"], "icons": ICONS,
           "iconText": t["icon"], "ended": t["ended"]}
    body = PAGE.substitute(
        lang=lang, nonce=nonce, css=CSS, script=SCRIPT, cfg=_script_json(cfg),
        refresh="" if ended else f'<noscript><meta http-equiv="refresh" content="{NO_REFRESH_S}"></noscript>',
        title=t["title"], request=html.escape(job.request or ""), status=status,
        status_text=t["status"][status], note=html.escape(state.note),
        steps_title=t["steps"], steps="".join(_step_html(s, lang) for s in state.steps),
        empty=t["empty"], empty_hidden=_hidden(bool(state.steps)),
        result_title=t["result"], result_hidden=_hidden(not (state.text or files)),
        text=html.escape(state.text or ""), text_hidden=_hidden(not state.text),
        files="".join(file_link_html(services, f, lang) for f in files), files_hidden=_hidden(not files),
        foot=t["ended"] if ended else t["live"],
    )
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
