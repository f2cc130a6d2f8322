"""The dashboard's two charts, drawn by bot.documents.charts as inline SVG (the page shows the
same numbers in a table beside each): messages in and out per day, and a student's results per week.

Drawing one takes matplotlib a few hundred milliseconds, most of a page's time; equal data make equal
bytes (bot.documents.charts), so the last charts drawn are kept by their data and a page
reloaded while nothing changed is not drawn again."""

from __future__ import annotations

from functools import lru_cache

from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from bot.documents.charts import ACCENT, BAD, GOOD, MUTED, new_figure, svg_text
from bot.web.admin.queries import DayCount


def _counts_axis(ax: Axes, highest: int) -> None:
    """Whole numbers from 0 up (an empty period still shows an axis from 0 to 1, not ±0.04)."""
    ax.set_ylim(0, max(1, highest) * 1.1)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))


@lru_cache(maxsize=64)
def messages_chart(days: tuple[DayCount, ...], title: str, labels: tuple[str, str]) -> str:
    fig = new_figure(7, 3.2)
    ax = fig.subplots()
    xs = list(range(len(days)))
    ax.bar([x - 0.2 for x in xs], [d.inbound for d in days], width=0.4, color=ACCENT, label=labels[0])
    ax.bar([x + 0.2 for x in xs], [d.outbound for d in days], width=0.4, color=MUTED, label=labels[1])
    _counts_axis(ax, max([max(d.inbound, d.outbound) for d in days], default=0))
    step = max(1, len(days) // 6)
    ax.set_xticks(xs[::step], [d.day[5:] for d in days][::step])
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1), ncols=2, frameon=False)  # above: no bar hidden
    return svg_text(fig, title=title)


@lru_cache(maxsize=256)
def results_chart(weeks: tuple[tuple[str, int, int], ...], title: str, labels: tuple[str, str]) -> str:
    fig = new_figure(6.4, 3.2)
    ax = fig.subplots()
    xs = list(range(len(weeks)))
    right = [w[1] for w in weeks]
    ax.bar(xs, right, color=GOOD, label=labels[0])
    ax.bar(xs, [w[2] for w in weeks], bottom=right, color=BAD, label=labels[1])
    _counts_axis(ax, max([w[1] + w[2] for w in weeks], default=0))
    step = max(1, len(weeks) // 6)
    ax.set_xticks(xs[::step], [w[0][5:] for w in weeks][::step])
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1), ncols=2, frameon=False)  # above: no bar hidden
    return svg_text(fig, title=title)
