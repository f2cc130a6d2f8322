"""The base of every exception bot.safety defines: `except SafetyError` catches all of them. A module of
its own, so that the package's modules and its `__init__` import it without importing each other."""


class SafetyError(Exception):
    """A failure of the safety checks (phrases, moderation, flags, who is told)."""
