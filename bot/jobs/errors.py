"""The base of every exception bot.jobs defines: `except JobError` catches all of them. A module of
its own, so that the package's modules and its `__init__` import it without importing each other."""


class JobError(Exception):
    """A failure of the background jobs' records."""
