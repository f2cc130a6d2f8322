"""The progress chart: a student's mastery per skill, grouped by subject, and their checked answers
of the last 8 weeks (right and wrong per week). One drawing for both targets (bot.documents.charts):
one tall PNG sent on WhatsApp with PROGRES and ENFANTS, and two SVGs inlined in the progress page.

The PNG is made for a phone: 960 px wide, each skill's name on its own line above its bar (a long
name never squeezes the bar), and every number written on the chart, the status in words beside
each percentage (the colours are a help, never the only sign). Only answers the server checked are
drawn, as in the text of PROGRES.

Drawing takes a few hundred milliseconds of CPU: the async callers run it in a thread
(`asyncio.to_thread`), one figure at a time (matplotlib's font cache is shared).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.config_groups import Learning
from bot.documents.charts import BAD, GOOD, MUTED, WARN, figure_bytes, new_figure, svg_text
from bot.learning import SkillView, skill_views, subject_name
from bot.learning.profile import LEARNING, MASTERED, REVIEW, STATUSES
from bot.storage.models import ExerciseResult
from bot.texts import fr_en

__all__ = ["MAX_CHART_SKILLS", "WEEKS", "ProgressData", "Week", "chart_svgs", "progress_data",
           "progress_png", "skill_name", "status_word", "week_label", "zone_of"]

WEEKS = 8
WEEK = timedelta(days=7)
MAX_CHART_SKILLS = 12  # the most practised; the others are counted under the chart (the page lists all)
PNG_WIDTH_IN, PNG_DPI = 4.8, 200  # 960 px: sharp on a phone, text about 12 px high once shown there
LINE_CHARS, TITLE_CHARS = 42, 34  # what one line of the chart holds at its font size, and the title's
_COLOURS = {MASTERED: GOOD, LEARNING: WARN, REVIEW: BAD}
_STATUS = {MASTERED: ("maîtrisé", "mastered"), LEARNING: ("en cours", "in progress"),
           REVIEW: ("à revoir", "to review")}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Week:
    start: date  # the first day of these 7 days, in the student's time zone
    right: int
    wrong: int

    @property
    def total(self) -> int:
        return self.right + self.wrong


@dataclass(frozen=True)
class ProgressData:
    """What the chart shows of one student, read once for the PNG, the page's SVGs and its tables."""

    skills: tuple[SkillView, ...]  # every skill with a checked answer, by subject then label
    weeks: tuple[Week, ...]  # WEEKS of them, the oldest first; the last ends now
    as_of: date

    def charted(self) -> tuple[SkillView, ...]:
        """The skills the chart draws: the MAX_CHART_SKILLS most practised, in the skills' order."""
        if len(self.skills) <= MAX_CHART_SKILLS:
            return self.skills
        kept = set(sorted(self.skills, key=lambda s: (-s.answers, s.p_known))[:MAX_CHART_SKILLS])
        return tuple(s for s in self.skills if s in kept)


def status_word(status: str, language: str) -> str:
    fr, en = _STATUS[status]
    return fr_en(language, fr, en)


def zone_of(name: str | None) -> ZoneInfo:
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


async def progress_data(db: AsyncSession, student_id: int, learning: Learning, now: datetime,
                        timezone: str | None = None) -> ProgressData:
    """The student's skills and the checked answers of the last WEEKS weeks, counted per 7 days
    ending `now` (the last bar is « the last 7 days », as in PROGRES's text)."""
    since = now - WEEKS * WEEK
    rows = (await db.execute(
        select(ExerciseResult.created_at, ExerciseResult.correct)
        .where(ExerciseResult.user_id == student_id, ExerciseResult.verified.is_(True),
               ExerciseResult.created_at >= since, ExerciseResult.created_at <= now)
    )).all()
    right, wrong = [0] * WEEKS, [0] * WEEKS
    for created_at, correct in rows:
        index = min(WEEKS - 1, int((created_at - since) / WEEK))
        if correct:
            right[index] += 1
        else:
            wrong[index] += 1
    zone = zone_of(timezone)
    weeks = tuple(Week(start=(since + i * WEEK + timedelta(seconds=1)).astimezone(zone).date(),
                       right=right[i], wrong=wrong[i]) for i in range(WEEKS))
    skills = tuple(await skill_views(db, student_id, learning))
    return ProgressData(skills=skills, weeks=weeks, as_of=now.astimezone(zone).date())


# --- drawing ------------------------------------------------------------------------------------


def drawable(text: str) -> str:
    """Text the chart's font can draw: no emoji or other sign past the Basic Multilingual Plane
    (DejaVu Sans has none, matplotlib would draw boxes), no control characters."""
    kept = "".join(c for c in text if c.isprintable() and ord(c) <= 0xFFFF and c != "\ufe0f")
    return " ".join(kept.split())


def skill_name(skill: SkillView, language: str) -> str:
    """Under its subject's name: a skill with no topic is the subject « in general »."""
    return skill.label or fr_en(language, "général", "general")


def _clip(text: str, limit: int) -> str:
    text = drawable(text)
    return text if len(text) <= limit else text[: max(1, limit - 1)].rstrip() + "…"


def _skill_rows(skills: Sequence[SkillView]) -> list[SkillView | str]:
    """Top to bottom: a subject's name (a str), then its skills; `skills` come grouped by subject."""
    rows: list[SkillView | str] = []
    subject = None
    for skill in skills:
        if skill.subject != subject:
            subject = skill.subject
            rows.append(subject)
        rows.append(skill)
    return rows


def _units(rows: Sequence[SkillView | str]) -> float:
    return sum(SUBJECT_H if isinstance(row, str) else SKILL_H for row in rows)


SUBJECT_H, SKILL_H = 0.8, 1.15  # the rows' heights, in the chart's units (about 0.5 in each)


def skills_height(data: ProgressData) -> float:
    return 1.2 + 0.42 * max(_units(_skill_rows(data.charted())), 1.5)


def draw_skills(ax: Axes, data: ProgressData, language: str, *, titled: bool = True) -> None:
    """One line per skill: its name on the left, « 97 % maîtrisé » on the right, its bar beneath;
    subjects in bold above their skills. Untitled in a page, whose heading says it."""
    if titled:
        ax.set_title(fr_en(language, "Maîtrise par compétence", "Mastery per skill"), loc="left", pad=22)
    ax.set_axis_off()
    skills = data.charted()
    rows = _skill_rows(skills)
    total = _units(rows) or 1.5
    ax.set_xlim(0, 1)
    ax.set_ylim(total, 0)
    if not skills:
        ax.text(0, 0.6, fr_en(language, "Pas encore de compétence évaluée.", "No skill assessed yet."),
                va="center", color=MUTED, parse_math=False)
        return
    y = 0.0
    for value in rows:
        if isinstance(value, str):
            ax.text(0, y + 0.5, drawable(subject_name(value, language)), fontweight="bold", va="center",
                    fontsize=13, parse_math=False)
            y += SUBJECT_H
            continue
        pct = f"{round(100 * value.p_known)} % {status_word(value.status, language)}"
        name = _clip(skill_name(value, language), LINE_CHARS - len(pct) - 2)
        ax.text(0, y + 0.35, name, va="center", fontsize=12, parse_math=False)
        ax.text(1, y + 0.35, pct, va="center", ha="right", fontsize=12, parse_math=False,
                fontweight="bold", color="#1a1a1a")
        ax.barh(y + 0.8, 1, height=0.3, color="#e6e6e6", left=0)
        ax.barh(y + 0.8, max(value.p_known, 0.01), height=0.3, color=_COLOURS[value.status], left=0)
        y += SKILL_H
    hidden = len(data.skills) - len(skills)
    if hidden:
        many = "s" if hidden > 1 else ""
        more = fr_en(language, f"+{hidden} autre{many} compétence{many}", f"+{hidden} more skill{many}")
        ax.text(0, total + 0.1, more, va="top", color=MUTED, fontsize=11, parse_math=False)
    ax.legend(handles=[Patch(color=_COLOURS[s], label=status_word(s, language)) for s in STATUSES],
              loc="lower left", bbox_to_anchor=(0, 1.0), ncols=3, frameon=False, fontsize=11,
              borderaxespad=0.1, handlelength=1.2, columnspacing=1.0)


def week_label(week: Week) -> str:
    return f"{week.start.day}/{week.start.month:02d}"


def draw_weeks(ax: Axes, data: ProgressData, language: str, *, titled: bool = True) -> None:
    """Right (bottom) and wrong answers stacked per week, « justes/total » above each bar."""
    if titled:
        ax.set_title(fr_en(language, "Réponses vérifiées, 8 semaines", "Checked answers, 8 weeks"),
                     loc="left", pad=22)
    xs = list(range(len(data.weeks)))
    right = [w.right for w in data.weeks]
    wrong = [w.wrong for w in data.weeks]
    ax.bar(xs, right, color=GOOD, width=0.7, label=fr_en(language, "justes", "right"))
    ax.bar(xs, wrong, bottom=right, color=BAD, width=0.7, label=fr_en(language, "fausses", "wrong"))
    top = max((w.total for w in data.weeks), default=0)
    ax.set_ylim(0, max(top, 1) * 1.25)
    for x, week in zip(xs, data.weeks, strict=True):
        shown = f"{week.right}/{week.total}" if week.total else "0"
        ax.text(x, week.total + max(top, 1) * 0.03, shown, ha="center", va="bottom", fontsize=11,
                parse_math=False)
    ax.set_xticks(xs, [week_label(w) for w in data.weeks], fontsize=10)
    ax.set_xlabel(fr_en(language, f"semaine du (jour/mois), jusqu'au {data.as_of:%d/%m/%Y}",
                        f"week of (day/month), up to {data.as_of:%d/%m/%Y}"), fontsize=10, color=MUTED)
    ax.set_yticks([])
    ax.spines["left"].set_visible(False)
    if not top:
        ax.text(len(xs) / 2 - 0.5, 0.6, fr_en(language, "Aucune réponse vérifiée", "No checked answer"),
                ha="center", color=MUTED, parse_math=False)
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncols=2, frameon=False, fontsize=11,
              borderaxespad=0.1, handlelength=1.2)


WEEKS_H = 3.0


def _figure(data: ProgressData, language: str, title: str) -> Figure:
    skills_h = skills_height(data)
    fig = new_figure(PNG_WIDTH_IN, skills_h + WEEKS_H + 0.6)
    fig.suptitle(_clip(title, TITLE_CHARS), x=0.02, ha="left", fontsize=15, fontweight="bold")
    top, bottom = fig.subplots(2, 1, height_ratios=[skills_h, WEEKS_H])
    draw_skills(top, data, language)
    draw_weeks(bottom, data, language)
    return fig


def progress_png(data: ProgressData, language: str, title: str) -> bytes:
    """The chart for WhatsApp: one PNG, PNG_WIDTH_IN × PNG_DPI pixels wide. Blocking: call it in a thread."""
    with _LOCK:
        return figure_bytes(_figure(data, language, title), "png", dpi=PNG_DPI)


def chart_svgs(data: ProgressData, language: str) -> tuple[str, str]:
    """The page's two charts as inline `<svg>` elements: skills, then weeks. Blocking: call it in a thread."""
    with _LOCK:
        skills_fig = new_figure(PNG_WIDTH_IN, skills_height(data) - 0.4)
        draw_skills(skills_fig.subplots(), data, language, titled=False)
        weeks_fig = new_figure(PNG_WIDTH_IN, WEEKS_H - 0.3)
        draw_weeks(weeks_fig.subplots(), data, language, titled=False)
        return (svg_text(skills_fig, title=fr_en(language, "Maîtrise par compétence", "Mastery per skill")),
                svg_text(weeks_fig, title=fr_en(language, "Réponses vérifiées, 8 semaines",
                                                "Checked answers, 8 weeks")))
