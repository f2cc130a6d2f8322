"""The base of every exception bot.assistant defines: `except AssistantError` catches all of them. A module of
its own, so that the package's modules and its `__init__` import it without importing each other."""


class AssistantError(Exception):
    """A failure of the assistant's own data (memories, tasks and reminders)."""
