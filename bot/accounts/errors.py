"""The base of every exception bot.accounts defines, `except AccountsError` catching all of them, and
those exceptions. A module of its own, so that the package's modules and its `__init__` import it
without importing each other."""


class AccountsError(Exception):
    """A failure of a person's account (enrolment, export, forgetting)."""


class AccountError(AccountsError, ValueError):
    """A request that cannot be done as asked (the console answers exit code 2)."""


class AccountBusy(AccountsError, RuntimeError):
    """The person is being answered right now: their lock was not free in time."""
