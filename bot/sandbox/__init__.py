"""Process isolation: the code sandbox (`bwrap`: bubblewrap with limits and no network), a control
group per sandbox (`cgroup`, v2 or v1), and blocking work in a child process that is killed on a
timeout or a cancellation (`killable`). Imports nothing of the bot's domains."""

from bot.sandbox.errors import SandboxError

__all__ = ["SandboxError", "bwrap", "cgroup", "killable"]
