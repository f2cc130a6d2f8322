"""The base of every exception bot.billing defines: `except BillingError` catches all of them. A module of
its own, so that the package's modules and its `__init__` import it without importing each other."""


class BillingError(Exception):
    """A failure of billing (the credit ledger, a payment provider)."""
