"""Time and size of the progress chart: the PNG sent on WhatsApp and the page's two SVGs, for a
student with few skills, a dozen, and more than are drawn.

    .venv/bin/python -m bench.charts [--repeat 5]

Fonts are loaded by a first, untimed drawing (as in a warm worker); then each case is drawn
`repeat` times and the median printed. Aim: a PNG under half a second, so PROGRES's image follows
its text within a second.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from functools import partial

from bot.learning import SkillView
from bot.learning.progress_chart import ProgressData, Week, chart_svgs, progress_png

COLUMNS = ("case", "skills", "PNG ms", "PNG KB", "SVGs ms", "SVGs KB")
SUBJECTS = ("Mathématiques", "Français", "SVT", "Physique-Chimie", "Histoire-Géographie")


@dataclass(frozen=True)
class Row:
    case: str
    skills: int
    png_ms: float
    png_kb: float
    svg_ms: float
    svg_kb: float


def student(skills: int) -> ProgressData:
    views = tuple(SkillView(SUBJECTS[n % len(SUBJECTS)], f"s{n}", f"compétence n°{n} — équations",
                            (n % 20) / 20, 5 + n, 3, ("review", "learning", "mastered")[n % 3])
                  for n in range(skills))
    views = tuple(sorted(views, key=lambda s: (SUBJECTS.index(s.subject), s.label)))
    weeks = tuple(Week(date(2026, 1, 8) + timedelta(days=7 * i), 3 * i % 11, i % 4) for i in range(8))
    return ProgressData(skills=views, weeks=weeks, as_of=date(2026, 3, 5))


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


CASES = (("few", 3), ("dozen", 12), ("many", 40))


def rows(repeat: int = 5, cases: tuple[tuple[str, int], ...] = CASES) -> list[Row]:
    progress_png(student(1), "fr", "warm-up")  # fonts and caches, as in a worker that drew once
    found = []
    for case, skills in cases:
        data = student(skills)
        png = progress_png(data, "fr", "Progrès de Awa")
        svgs = chart_svgs(data, "fr")
        found.append(Row(case=case, skills=skills,
                         png_ms=_median_ms(partial(progress_png, data, "fr", "Progrès de Awa"), repeat),
                         png_kb=len(png) / 1024,
                         svg_ms=_median_ms(partial(chart_svgs, data, "fr"), repeat),
                         svg_kb=sum(len(s.encode()) for s in svgs) / 1024))
    return found


def table(found: list[Row]) -> str:
    cells = [COLUMNS] + [(r.case, str(r.skills), f"{r.png_ms:.0f}", f"{r.png_kb:.0f}", f"{r.svg_ms:.0f}",
                          f"{r.svg_kb:.0f}") for r in found]
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w)
                       for i, (c, w) in enumerate(zip(row, widths, strict=True))) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.charts", description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="drawings per case (the median is shown)")
    args = parser.parse_args(argv)
    print(f"progress chart, median of {args.repeat} drawings per case")
    print(table(rows(args.repeat)))
