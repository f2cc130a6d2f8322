"""A student's progress page: GET /progress/{id}?sig=… (HTML), for the student and their family.

The link (bot.channel.links.progress_page_url) ends PROGRES and ENFANTS by SMS; its `sig` opens that
one student's page until PROGRESS_LINK_TTL_S has passed. A tampered or expired link gets 403 and a
student who is not (or no longer) there 404, both with no data. The page is server-rendered
(bot.web.render: Jinja2, autoescaped), mobile first, in the student's language: each chart
an inline SVG with a table of the same numbers beside it, readable without images or scripts; the
page has no script and loads nothing from elsewhere (pages.PAGE_HEADERS: CSP, no-store).

What it shows is what PROGRES says, from checked answers only: per subject, per skill (mastery),
per week; what the model only reported is counted apart. The student's phone number never appears.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from bot.channel.app_keys import services_of
from bot.channel.links import ID_PATTERN, check_progress_signature
from bot.learning import due_count, subject_name
from bot.learning.progress import SubjectStats, subject_stats
from bot.learning.progress_chart import (
    ProgressData,
    Week,
    chart_svgs,
    progress_data,
    skill_name,
    status_word,
    week_label,
    zone_of,
)
from bot.services import Services
from bot.storage.models import User
from bot.texts import fr_en
from bot.web import render as pages

__all__ = ["ROUTES", "progress_page"]

_IDS = re.compile(r'((?:\bid|xlink:href)=")#?|url\(#')


def scoped(svg: str, prefix: str) -> str:
    """The SVG's ids (and the references to them) prefixed: two charts inlined in one page would
    otherwise both have `figure_1`, `axes_1`… and one chart's clip path could be the other's."""
    def rename(match: re.Match[str]) -> str:
        text = match.group(0)
        if text.startswith("url(#"):
            return f"url(#{prefix}"
        return f"{text}{prefix}"
    return _IDS.sub(rename, svg)


@dataclass(frozen=True)
class SubjectRow:
    name: str
    checked: int
    right_pct: int | None
    last7: str
    reported: int


@dataclass(frozen=True)
class SkillRow:
    name: str
    pct: int
    status: str  # the word, in the page's language
    status_key: str
    answers: str  # « 6/8 »


def _subject_rows(stats: list[SubjectStats], lang: str) -> list[SubjectRow]:
    return [SubjectRow(name=subject_name(s.subject, lang), checked=s.total,
                       right_pct=round(100 * s.correct / s.total) if s.total else None,
                       last7=f"{s.last7_correct}/{s.last7_total}" if s.last7_total else "–",
                       reported=s.unverified_total) for s in stats]


def _skill_groups(data: ProgressData, lang: str) -> list[tuple[str, list[SkillRow]]]:
    groups: dict[str, list[SkillRow]] = {}
    for s in data.skills:
        groups.setdefault(subject_name(s.subject, lang), []).append(SkillRow(
            name=skill_name(s, lang), pct=round(100 * s.p_known), status=status_word(s.status, lang),
            status_key=s.status, answers=f"{s.correct}/{s.answers}"))
    return list(groups.items())


def _week_rows(weeks: tuple[Week, ...]) -> list[tuple[str, int, int, int]]:
    return [(week_label(w), w.right, w.wrong, w.total) for w in reversed(weeks)]  # the latest first


def _title(student: User, lang: str) -> str:
    # The display name or nothing: a link may be forwarded, and the number is nobody's business.
    if student.display_name:
        return fr_en(lang, f"Progrès de {student.display_name}", f"{student.display_name}'s progress")
    return fr_en(lang, "Progrès de l'élève", "Student's progress")


def _denied(status: int) -> web.Response:
    """The same short page in both languages: before the link is checked, nobody's language is known."""
    if status == 403:
        fr = ("Ce lien n'est pas valide ou a expiré. PROGRES (ou ENFANTS) envoyé à Deblo en donne "
              "un nouveau.")
        en = "This link is invalid or has expired. Send PROGRESS (or CHILDREN) to Deblo to get a new one."
    else:
        fr, en = "Cette page n'existe pas ou a été effacée.", "This page does not exist or was deleted."
    return pages.html_response("progress_denied.html", status=status, lang="fr", title="Deblo", fr=fr, en=en)


async def _context(services: Services, student: User, now: datetime, expires: datetime) -> dict[str, Any]:
    lang = fr_en(student.language, "fr", "en")
    async with services.sessions() as db:
        stats = await subject_stats(db, student.id, now)
        data = await progress_data(db, student.id, services.settings.learning, now, student.timezone)
        due = await due_count(db, student.id, now)
    skills_svg, weeks_svg = await asyncio.to_thread(chart_svgs, data, lang)
    return {
        "lang": lang, "title": _title(student, lang), "as_of": f"{data.as_of:%d/%m/%Y}",
        "subjects": _subject_rows(stats, lang), "skill_groups": _skill_groups(data, lang),
        "weeks": _week_rows(data.weeks), "due": due, "until": f"{expires:%d/%m/%Y}",
        "skills_svg": scoped(skills_svg, "sk-"), "weeks_svg": scoped(weeks_svg, "wk-"),
        "has_answers": any(w.total for w in data.weeks),
    }


async def progress_page(request: web.Request) -> web.Response:
    services = services_of(request)
    now = services.clock()
    sig = request.query.get("sig", "")
    student_id = check_progress_signature(services.settings, request.match_info["id"], sig,
                                          now=now.timestamp())
    if student_id is None:
        return _denied(403)
    async with services.sessions() as db:
        student = await db.get(User, student_id)
    if student is None:
        return _denied(404)
    expires = datetime.fromtimestamp(int(sig.partition(".")[0]), UTC).astimezone(zone_of(student.timezone))
    context = await _context(services, student, now, expires)
    return pages.html_response("progress.html", **context)


# An id in another spelling (`007`) matches no route: 404, as for a student who is not there.
ROUTES: list[web.RouteDef] = [web.get(f"/progress/{{id:{ID_PATTERN}}}", progress_page)]
