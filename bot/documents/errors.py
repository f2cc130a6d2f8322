"""The base of every exception bot.documents defines: `except DocumentError` catches all of them. A module of
its own, so that the package's modules and its `__init__` import it without importing each other."""


class DocumentError(Exception):
    """A failure of the documents (a generator, an extraction, a conversion, a workbook's formulas)."""
