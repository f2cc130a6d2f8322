"""Money: the credit ledger (`credits`: balances, debits of a turn's tokens and media, the daily token
allowance, credit packs) and the payment providers behind the packs (`payments`: the provider
protocol, Paystack, the local provider used in trials and tests) and what the learners cost the
operator (`costs`: per week and month, messages, templates and tokens). Pages and webhooks that take a
payment are in bot.web."""

from bot.billing.errors import BillingError

__all__ = ["BillingError", "costs", "credits", "payments"]
