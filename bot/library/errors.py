"""The base of every exception bot.library defines: `except LibraryError` catches all of them. A module of
its own, so that the package's modules and its `__init__` import it without importing each other."""


class LibraryError(Exception):
    """A failure of the user's library (files, chunks, the index, search)."""
