"""The bot's rules for reaching a student, on one simulated student's record (no database).

Three policies:

- today's nudges: the nudge before the study hours (bot/learning/nudges.py and review.py as they
  were before commit 6247208): a missed item due exactly when FSRS says (a day after the answer); the
  nudge at the first 5-minute tick, 08:00-20:00 local, at which the student has items due, wrote on
  WhatsApp less than 24 h ago and nothing for NUDGE_AFTER_S (4 h), once a local day; no button, the
  backlog's count (neither changes when it goes).
- this issue's nudges: a missed item due at the student's study hour at least 20 h later, a right
  one at that hour on FSRS's day (`bot.learning.next_review` with a `StudyTime`, as
  bot.learning.record passes it), a round's score offering the next round, a question due asked
  after a quiz's verdict and a round taking the items due within the hour; the same
  nudge, but not before the day's `send_hour` of the learned `study_hour` (bot.learning.study_hours'
  `at_study_hour` as SQL, here as Python).
- with template re-engagement: plus bot.learning.reengage's template (REVIEW_TEMPLATE_SID set):
  to a student with items due silent for REENGAGE_AFTER_S, at the study hour or later that day,
  08:00-20:00, once a day, at most REENGAGE_MAX_PER_WEEK in 7 days, none once UNANSWERED_MAX went
  unanswered since the student last wrote.

The conditions are the modules' SQL mirrored; the constants and pure functions are the bot's own.
STOP, REVISION NON and gentle days after distress are not simulated (no simulated student says them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from bench.learning.policies import START
from bench.learning.student import Item
from bot.config_groups import Learning
from bot.learning import DEFAULT_STUDY_HOUR, study_hour
from bot.learning.nudges import WINDOW
from bot.learning.reengage import UNANSWERED_MAX, WEEK
from bot.learning.study_hours import DAY_ENDS, DAY_STARTS, LOOKBACK, RELEARN_AFTER, send_hour

NUDGE, TEMPLATE = "nudge", "template"
TICK = timedelta(seconds=300)  # the jobs run every NUDGE_INTERVAL_S
TZ = UTC  # the students' zone: Africa/Abidjan, DEFAULT_TIMEZONE, is UTC all year


@dataclass(frozen=True)
class Policy:
    name: str
    study_hours: bool  # this timing: misses due, and nudges sent, at the study hour
    template: bool  # REVIEW_TEMPLATE_SID configured
    more: bool = True  # a round's end offers the next one while items are due (handlers/review.py)
    # A question due after a quiz's verdict, and a round takes the items due within REVIEW_AHEAD
    # (handlers/review.py's `weave`, bot.learning.rounds).
    session_offers: bool = True


POLICIES = (
    Policy("today's nudges", study_hours=False, template=False, more=False, session_offers=False),
    Policy("this issue's nudges", study_hours=True, template=False),
    Policy("+ template re-engagement", study_hours=True, template=True),
)


@dataclass(frozen=True)
class Send:
    """One message the bot sent, with what the rules looked at: the test checks them."""

    kind: str
    at: datetime
    last_inbound: datetime


@dataclass
class Contact:
    """What the bot knows of the student's messages (users.last_inbound_at, inbound_messages, sends)."""

    stamps: list[datetime] = field(default_factory=list)
    sent: list[Send] = field(default_factory=list)
    learned: int | None = None  # users.study_hour
    learned_at: datetime | None = None  # users.study_hour_at

    @property
    def last_inbound(self) -> datetime | None:
        return self.stamps[-1] if self.stamps else None

    def hour(self, now: datetime) -> int:
        """The study hour as `learned_hour` keeps it: `study_hour` of the messages of the last
        LOOKBACK, learned again when the student wrote since and RELEARN_AFTER has passed."""
        last, learned_at = self.last_inbound, self.learned_at
        wrote_since = last is not None and learned_at is not None and last > learned_at
        if learned_at is None or (wrote_since and now - learned_at >= RELEARN_AFTER):
            self.learned = study_hour([s for s in self.stamps if s >= now - LOOKBACK], TZ)
            self.learned_at = now
        return DEFAULT_STUDY_HOUR if self.learned is None else self.learned

    def sent_on(self, kind: str, day: date) -> bool:
        return any(s.kind == kind and s.at.date() == day for s in self.sent)


def days_of(moment: datetime) -> float:
    return (moment - START).total_seconds() / 86400


def moment_of(days: float) -> datetime:
    return START + timedelta(days=days)


def has_due(items: list[Item], now: datetime) -> bool:
    return any(item.due is not None and item.due <= days_of(now) + 1e-9 for item in items)


def may_nudge(c: Contact, items: list[Item], now: datetime, policy: Policy, learning: Learning) -> bool:
    last = c.last_inbound
    if last is None or not DAY_STARTS <= now.hour < DAY_ENDS or c.sent_on(NUDGE, now.date()):
        return False
    if policy.study_hours and now.hour < send_hour(c.hour(now)):
        return False
    quiet = now - last >= timedelta(seconds=learning.nudge_after_s)
    return quiet and now - last < WINDOW and has_due(items, now)


def may_reengage(c: Contact, items: list[Item], now: datetime, policy: Policy, learning: Learning) -> bool:
    last = c.last_inbound
    if not policy.template or not learning.reengage_max_per_week or last is None:
        return False
    if not DAY_STARTS <= now.hour < DAY_ENDS or now.hour < send_hour(c.hour(now)):
        return False
    templates = [s for s in c.sent if s.kind == TEMPLATE]
    if c.sent_on(TEMPLATE, now.date()) or sum(s.at > last for s in templates) >= UNANSWERED_MAX:
        return False
    if sum(s.at > now - WEEK for s in templates) >= learning.reengage_max_per_week:
        return False
    return now - last >= timedelta(seconds=learning.reengage_after_s) and has_due(items, now)


def _tick(moment: datetime) -> datetime:
    """The first job tick at or after `moment`."""
    ticks = -(-(moment - START) // TICK)
    return START + ticks * TICK


def _moments(c: Contact, items: list[Item], after: datetime, until: datetime,
             learning: Learning) -> list[datetime]:
    """Every moment from which the rules' answer may change before `until`: between two of them
    nothing they look at moves, so the first tick a message may go is one of these."""
    found = {after}
    last = c.last_inbound
    if last is not None:
        found |= {last + WINDOW, last + timedelta(seconds=learning.nudge_after_s),
                  last + timedelta(seconds=learning.reengage_after_s)}
    future = [item.due for item in items if item.due is not None and item.due > days_of(after)]
    if future:
        found.add(moment_of(min(future)))
    found |= {s.at + WEEK for s in c.sent}
    day = after.date()
    while datetime.combine(day, time(0), TZ) < until:
        found |= {datetime.combine(day, time(hour), TZ) for hour in range(DAY_STARTS, DAY_ENDS + 1)}
        day += timedelta(days=1)
    return sorted({_tick(m) for m in found if after <= m < until})


def next_send(c: Contact, items: list[Item], after: datetime, until: datetime, policy: Policy,
              learning: Learning) -> tuple[str, datetime] | None:
    """The first message the bot sends after `after` and before `until`, if the student stays silent."""
    for moment in _moments(c, items, after, until, learning):
        if moment >= until:
            return None
        if may_nudge(c, items, moment, policy, learning):
            return NUDGE, moment
        if may_reengage(c, items, moment, policy, learning):
            return TEMPLATE, moment
    return None
