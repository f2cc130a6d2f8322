"""The modes a tool can be offered in. Each tool module states its own (`modes=CHILD_AND_PRO`);
tools/registry.py derives what each mode gets from them.

guest: none (plain chat); child: 22 (all but bash_execute and draft_email); pro: all 24.
"""

from __future__ import annotations

MODES: tuple[str, ...] = ("guest", "child", "pro")

CHILD_AND_PRO = frozenset({"child", "pro"})
PRO = frozenset({"pro"})
