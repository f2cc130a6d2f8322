"""The base of every exception bot.sandbox defines: `except SandboxError` catches all of them. A module of
its own, so that the package's modules and its `__init__` import it without importing each other."""


class SandboxError(Exception):
    """A failure of the sandbox (bubblewrap, control groups, a killable child process)."""
