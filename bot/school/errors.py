"""The base of every exception bot.school defines: `except SchoolError` catches all of them. A module of
its own, so that the package's modules and its `__init__` import it without importing each other."""


class SchoolError(Exception):
    """A failure of the school (classes, rosters, operators)."""
