"""The modes a tool can be offered in. Each tool module states its own (`modes=CHILD_AND_PRO`);
tools/registry.py derives what each mode gets from them.

guest: none (plain chat); child: 22 (all but bash_execute and draft_email); pro: all 24.
A parent (role "parent") is no mode of its own: its mode is child, and what it is offered is that
mode's tools seen for the role (tools.offered): no quiz nor credit award (a parent is not the
learner), and the pro's e-mail draft (documents, reminders and e-mail as a pro).
"""

from __future__ import annotations

MODES: tuple[str, ...] = ("guest", "child", "pro")

CHILD_AND_PRO = frozenset({"child", "pro"})
PRO = frozenset({"pro"})

# What the role "parent" changes to the child mode's tools.
PARENT_DROPS = frozenset({"interactive_quiz", "true_false_quiz", "award_bonus_credits"})
PARENT_ADDS = frozenset({"draft_email"})
