"""The dashboard's two charts, drawn by bot.capabilities.charts as inline SVG (the page shows the
same numbers in a table beside each): messages in and out per day, and a student's results per week."""

from __future__ import annotations

from bot.capabilities.admin.queries import DayCount
from bot.capabilities.charts import ACCENT, BAD, GOOD, MUTED, new_figure, svg_text


def messages_chart(days: list[DayCount], title: str, labels: tuple[str, str]) -> str:
    fig = new_figure(9, 3.2)
    ax = fig.subplots()
    xs = list(range(len(days)))
    ax.bar([x - 0.2 for x in xs], [d.inbound for d in days], width=0.4, color=ACCENT, label=labels[0])
    ax.bar([x + 0.2 for x in xs], [d.outbound for d in days], width=0.4, color=MUTED, label=labels[1])
    step = max(1, len(days) // 6)
    ax.set_xticks(xs[::step], [d.day[5:] for d in days][::step])
    ax.legend(loc="upper left", frameon=False)
    return svg_text(fig, title=title)


def results_chart(weeks: list[tuple[str, int, int]], title: str, labels: tuple[str, str]) -> str:
    fig = new_figure(8, 3)
    ax = fig.subplots()
    xs = list(range(len(weeks)))
    right = [w[1] for w in weeks]
    ax.bar(xs, right, color=GOOD, label=labels[0])
    ax.bar(xs, [w[2] for w in weeks], bottom=right, color=BAD, label=labels[1])
    step = max(1, len(weeks) // 6)
    ax.set_xticks(xs[::step], [w[0][5:] for w in weeks][::step])
    ax.legend(loc="upper left", frameon=False)
    return svg_text(fig, title=title)
