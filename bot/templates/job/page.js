{# Reads the stream and grows the page in place, as bot.web.job_page reads the events on the server.
   Only textContent is set: what the events carry is never parsed as HTML. #}
(function () {
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
})();
