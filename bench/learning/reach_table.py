"""`python -m bench.learning --habits`: the table of bench.learning.reach and issue 38's aims.

Columns, per habit and policy, means per student: reviews per week (answers in review rounds),
nudges per week, right at dN (the share of taught items a probe answers right on the last day, by
bench.learning.student's memory), templates per month and their cost (COST_PER_TEMPLATE_MESSAGE +
COST_PER_WHATSAPP_MESSAGE from the environment, in PAYMENT_CURRENCY, unless `--template-price`), and
for drop-outs the share who wrote again after dropping out. Below it, issue 38's aims: this issue's
nudges at least 3x today's reviews for the evening student; re-engagement bringing back at least
half of the drop-outs.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from bench.learning.habits import HABITS, Habit
from bench.learning.reach import Outcome, Reach, Setup, month
from bench.learning.reach import __doc__ as REACH_DOC
from bench.learning.sends import POLICIES, Policy
from bench.learning.student import Memory
from bot.config import load_settings

COLUMNS = ("habit", "policy", "reviews/wk", "nudges/wk", "right at d{days}", "templates/mo",
           "cost/mo", "back")
EVENING, DROP_OUT = HABITS[0].name, HABITS[3].name
TODAY, ISSUE, TEMPLATES = (p.name for p in POLICIES)


@dataclass(frozen=True)
class Row:
    habit: str
    policy: str
    reviews: float  # per student-week
    nudges: float  # per student-week
    right: float
    templates: float  # per student-month (30 days)
    cost: float  # per student-month
    back: float | None  # drop-outs only: the share who wrote again

    def cells(self, currency: str) -> tuple[str, ...]:
        back = "-" if self.back is None else f"{self.back:.0%}"
        return (self.habit, self.policy, f"{self.reviews:.1f}", f"{self.nudges:.1f}", f"{self.right:.1%}",
                f"{self.templates:.2f}", f"{self.cost:.2f} {currency}", back)


def row(setup: Setup, habit: Habit, policy: Policy) -> tuple[Row, list[Outcome]]:
    months = [month(setup, habit, index, policy) for index in range(setup.students)]
    n, weeks = len(months), setup.days / 7
    templates = sum(m.templates for m in months) / n * 30 / setup.days
    back = sum(m.back for m in months) / n if habit.stops_after is not None else None
    return Row(habit=habit.name, policy=policy.name, reviews=sum(m.reviews for m in months) / n / weeks,
               nudges=sum(m.nudges for m in months) / n / weeks, right=sum(m.right for m in months) / n,
               templates=templates, cost=templates * setup.template_price, back=back), months


def rows(setup: Setup) -> list[Row]:
    """One row per habit and policy, habits in the order of HABITS, policies of POLICIES."""
    return [row(setup, habit, policy)[0] for habit in HABITS for policy in POLICIES]


def find(found: list[Row], habit: str, policy: str) -> Row:
    return next(r for r in found if r.habit == habit and r.policy == policy)


def aims(found: list[Row]) -> list[tuple[str, bool]]:
    """Issue 38's aims, each with whether this run met it."""
    today, issue = find(found, EVENING, TODAY).reviews, find(found, EVENING, ISSUE).reviews
    ratio = issue / today if today else float("inf")
    back, nudged = (find(found, DROP_OUT, policy).back or 0.0 for policy in (TEMPLATES, ISSUE))
    return [(f"evening student: this issue's nudges give {ratio:.2f}x today's reviews (aim: 3x)", ratio >= 3),
            (f"drop-outs: re-engagement brings back {back:.0%}, the nudges alone {nudged:.0%} (aim: at least "
             "half)", back >= 0.5)]


def table(setup: Setup, found: list[Row]) -> str:
    lines = [r.cells(setup.currency) for r in found]
    columns = [c.format(days=setup.days) for c in COLUMNS]
    widths = [max(len(c), *(len(r[i]) for r in lines)) for i, c in enumerate(columns)]
    fmt = "  ".join(f"{{:<{w}}}" if i < 2 else f"{{:>{w}}}" for i, w in enumerate(widths))
    head = [fmt.format(*columns), fmt.format(*("-" * w for w in widths))]
    return "\n".join(head + [fmt.format(*r) for r in lines])


def parse(argv: list[str] | None = None) -> Setup:
    parser = argparse.ArgumentParser(prog="python -m bench.learning --habits", description=REACH_DOC,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults, reach = Setup(), Reach()
    for name in ("students", "days", "seed"):
        parser.add_argument(f"--{name}", type=int, default=getattr(defaults, name))
    for name in ("offer_take", "nudge_take", "template_take", "busy", "resume", "more_take", "woven_take"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=float, default=getattr(reach, name),
                            help="assumed, not measured")
    settings = load_settings()  # as the bot reads them: the environment over .env, defaults otherwise
    costs = settings.costs
    parser.add_argument("--template-price", type=float,
                        default=costs.cost_per_template_message + costs.cost_per_whatsapp_message)
    args = vars(parser.parse_args(argv))
    taken = Reach(**{name: args.pop(name) for name in ("offer_take", "nudge_take", "template_take", "busy",
                                                        "resume", "more_take", "woven_take")})
    return Setup(reach=taken, memory=Memory(), learning=settings.learning,
                 currency=settings.payment_currency.upper(), **args)


def main(argv: list[str] | None = None) -> None:
    setup = parse(argv)
    r, learning = setup.reach, setup.learning
    print(f"{setup.students} simulated students per habit, {setup.days} days, seed {setup.seed}; hour by "
          "hour under WhatsApp's 24 h window and 08:00-20:00 local")
    print(f"assumed: review offer taken {r.offer_take:.0%}, nudge acted on {r.nudge_take:.0%}, template "
          f"{r.template_take:.0%} (at a free hour; x{r.busy:g} otherwise), a drop-out brought back keeps "
          f"their habit {r.resume:.0%}, a round's offer of more {r.more_take:.0%}, a question due after a "
          f"quiz's verdict answered {r.woven_take:.0%}")
    print(f"settings: NUDGE_AFTER_S={learning.nudge_after_s}, REENGAGE_AFTER_S={learning.reengage_after_s}, "
          f"REENGAGE_MAX_PER_WEEK={learning.reengage_max_per_week}, a template costs "
          f"{setup.template_price:g} {setup.currency}")
    found = rows(setup)
    print(table(setup, found))
    for text, met in aims(found):
        print(f"{'met' if met else 'NOT met'}: {text}")
