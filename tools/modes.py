"""The modes a tool can be offered in. Each tool module states its own (`modes=EVERY_PROFILE`);
tools/registry.py derives what each mode gets from them.

guest: none (plain chat); child: 22 (all but bash_execute and draft_email); pro: all 24.
"parent" in a tool's modes is no mode of its own (MODES keeps the three): a parent's mode is child,
and what they are offered is the tools that name "parent" (tools.offered): the child mode's but
the quizzes and the credit award (a parent is not the learner), and the pro's e-mail draft
(documents, reminders and e-mail as a pro).
"""

from __future__ import annotations

MODES: tuple[str, ...] = ("guest", "child", "pro")
PARENT = "parent"  # the role parent's view of the child mode

EVERY_PROFILE = frozenset({"child", "pro", PARENT})
CHILD_AND_PRO = frozenset({"child", "pro"})  # the learner's tools: quizzes, credit awards
PRO_AND_PARENT = frozenset({"pro", PARENT})
PRO = frozenset({"pro"})
