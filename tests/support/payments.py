"""Buying credits through the chat, for the payment tests: the buyer, the Paystack stand-in's secret
(tests/fakes/paystack.py, started by tests/payments/conftest.py), and the steps and reads they share."""

from __future__ import annotations

from sqlalchemy import select

from bot.storage.models import CreditEntry, Payment

USER = "+2250700000010"
SECRET = "sk_test_0123456789abcdef"


async def say(h, text: str) -> str:
    status, _ = await h.inbound(USER, text)
    assert status == 200
    await h.settle()
    return (await h.texts_to(USER))[-1]


async def ledger(h, user_id: int) -> list[CreditEntry]:
    async with h.services.sessions() as db:
        return list(
            await db.scalars(
                select(CreditEntry).where(CreditEntry.user_id == user_id, CreditEntry.reason == "purchase")
            )
        )


async def balance(h) -> int:
    return (await h.user(USER)).credit_balance


async def buy_pack_two(h, paystack) -> Payment:
    menu = await say(h, "ACHETER")
    assert menu.splitlines()[1:] == [
        "1. 100 crédits — 500 FCFA",
        "2. 250 crédits — 1 000 FCFA",
        "3. 600 crédits — 2 000 FCFA",
    ]
    reply = await say(h, "2")
    async with h.services.sessions() as db:
        payment = await db.scalar(
            select(Payment).where(Payment.status == "pending").order_by(Payment.id.desc())
        )
    init = paystack.initialized[-1]
    assert init["amount"] == "100000" and init["currency"] == "XOF"  # 1 000 XOF in Paystack's subunit
    assert init["reference"] == payment.reference and "@" in init["email"]
    assert init["metadata"]["credits"] == 250
    assert "https://checkout.paystack.com/" in reply and "250 crédits" in reply
    assert payment.status == "pending" and payment.credits == 250 and payment.amount == 1000
    return payment
