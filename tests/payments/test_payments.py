"""Buying credits: the menu, the payment link from Paystack, and its signed webhook credited once.

Paystack is a local server speaking its wire format (tests/fakes/paystack.py); the bot is
the real app of tests/support/harness.py.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select, update

from bot.agent.toolspec import ToolContext
from bot.billing.payments.local import signature as local_signature
from bot.channel.menus import get_menu
from bot.storage.models import CreditEntry, Payment, PendingMenu
from tests.fakes.paystack import PaystackStandIn
from tests.support.payments import USER, balance, buy_pack_two, ledger, say
from tools import by_name, for_mode


async def post_webhook(h, body: bytes, headers: dict[str, str], provider: str = "paystack") -> int:
    async with h.session.post(
        f"{h.base_url}/payments/webhook/{provider}", data=body, headers=headers
    ) as resp:
        return resp.status


async def test_menu_choice_gives_a_paystack_link(h, paystack) -> None:
    user = await h.make_user(USER)
    await buy_pack_two(h, paystack)
    assert await get_menu(h.services, (await conversation_id(h, user.id))) is None  # answered
    assert h.llm.requests == []


async def conversation_id(h, user_id: int) -> int:
    from bot.storage.models import Conversation

    async with h.services.sessions() as db:
        return await db.scalar(select(Conversation.id).where(Conversation.user_id == user_id))


async def test_webhook_credits_once_however_often_delivered(h, paystack) -> None:
    user = await h.make_user(USER)
    before = await balance(h)
    payment = await buy_pack_two(h, paystack)
    event = paystack.pay(payment.reference)
    assert await post_webhook(h, event, paystack.signed(event)) == 200
    await h.twilio.idle()
    assert await balance(h) == before + 250
    told = [t for t in await h.texts_to(USER) if "Paiement reçu" in t]
    assert told == [f"✅ Paiement reçu : +250 crédits. Solde : {before + 250} crédits. Merci !"]
    # Paystack retries, sometimes concurrently.
    statuses = await asyncio.gather(*(post_webhook(h, event, paystack.signed(event)) for _ in range(5)))
    assert statuses == [200] * 5
    await h.twilio.idle()
    assert await balance(h) == before + 250
    assert len(await ledger(h, user.id)) == 1
    assert len([t for t in await h.texts_to(USER) if "Paiement reçu" in t]) == 1
    assert paystack.verified[0] == payment.reference
    async with h.services.sessions() as db:
        stored = await db.get(Payment, payment.id)
        assert stored.status == "paid" and stored.paid_at is not None


async def test_concurrent_first_deliveries_credit_once(h, paystack) -> None:
    user = await h.make_user(USER)
    before = await balance(h)
    payment = await buy_pack_two(h, paystack)
    event = paystack.pay(payment.reference)
    statuses = await asyncio.gather(*(post_webhook(h, event, paystack.signed(event)) for _ in range(4)))
    assert statuses == [200] * 4
    assert await balance(h) == before + 250
    assert len(await ledger(h, user.id)) == 1


async def test_bad_signature_is_refused_and_nothing_credited(h, paystack) -> None:
    user = await h.make_user(USER)
    before = await balance(h)
    payment = await buy_pack_two(h, paystack)
    event = paystack.pay(payment.reference)
    forged = PaystackStandIn("sk_test_wrong").signed(event)
    assert await post_webhook(h, event, forged) == 401
    assert await post_webhook(h, event, {"Content-Type": "application/json"}) == 401
    tampered = event.replace(b'"amount": 100000', b'"amount": 100001')
    assert await post_webhook(h, tampered, paystack.signed(event)) == 401
    assert await balance(h) == before
    assert await ledger(h, user.id) == []
    assert paystack.verified == []  # refused before asking Paystack anything
    assert not [t for t in await h.texts_to(USER) if "Paiement" in t]


async def test_amount_mismatch_and_unconfirmed_payment_are_not_credited(h, paystack) -> None:
    user = await h.make_user(USER)
    before = await balance(h)
    payment = await buy_pack_two(h, paystack)
    underpaid = paystack.pay(payment.reference, amount=100)
    assert await post_webhook(h, underpaid, paystack.signed(underpaid)) == 200
    # A signed event Paystack's verify endpoint does not back up (e.g. a reused key elsewhere).
    paystack.transactions[payment.reference]["status"] = "success"
    paystack.transactions[payment.reference]["amount"] = 100
    event = json.dumps(
        {
            "event": "charge.success",
            "data": {
                "reference": payment.reference,
                "status": "success",
                "amount": 100000,
                "currency": "XOF",
            },
        }
    ).encode()
    assert await post_webhook(h, event, paystack.signed(event)) == 200
    assert await balance(h) == before
    assert await ledger(h, user.id) == []


async def test_other_events_and_unknown_references_are_acknowledged_without_credit(h, paystack) -> None:
    user = await h.make_user(USER)
    before = await balance(h)
    other = json.dumps({"event": "transfer.success", "data": {"reference": "x"}}).encode()
    assert await post_webhook(h, other, paystack.signed(other)) == 200
    unknown = json.dumps(
        {
            "event": "charge.success",
            "data": {"reference": "deblo-1-unknown", "status": "success", "amount": 50000, "currency": "XOF"},
        }
    ).encode()
    assert await post_webhook(h, unknown, paystack.signed(unknown)) == 200
    assert await post_webhook(h, b"not json", paystack.signed(b"not json")) == 400
    assert await post_webhook(h, other, paystack.signed(other), provider="flutterwave") == 404
    assert await balance(h) == before and await ledger(h, user.id) == []


async def test_gateway_down_then_back(h, paystack) -> None:
    user = await h.make_user(USER)
    before = await balance(h)
    await say(h, "ACHETER")
    paystack.mode = "down"
    assert "ne répond pas" in await say(h, "1")
    paystack.mode = "ok"
    payment = await buy_pack_two(h, paystack)
    event = paystack.pay(payment.reference)
    paystack.mode = "down"  # the verify call fails: not acknowledged, so Paystack retries later
    assert await post_webhook(h, event, paystack.signed(event)) == 503
    assert await balance(h) == before
    paystack.mode = "ok"
    assert await post_webhook(h, event, paystack.signed(event)) == 200
    assert await balance(h) == before + 250
    assert len(await ledger(h, user.id)) == 1


async def test_slow_gateway_gives_an_error_result_in_time(h, paystack) -> None:
    user = await h.make_user(USER)
    tool = by_name()["buy_credits"]
    sent: list[str] = []

    async def deliver(text: str = "", media: object = None) -> None:
        sent.append(text)

    ctx = ToolContext(
        services=h.services,
        user_id=user.id,
        conversation_id=await conversation_id(h, user.id),
        channel="whatsapp",
        mode="child",
        language="fr",
        deliver=deliver,
    )
    paystack.mode = "slow"
    result = await asyncio.wait_for(tool.run(ctx, {"pack": 1}), timeout=10)
    assert result["success"] is False and "unavailable" in result["error"]
    assert sent == []
    async with h.services.sessions() as db:
        assert [p.status for p in await db.scalars(select(Payment))] == ["failed"]


async def test_tool_shows_the_menu_then_the_link(h, paystack) -> None:
    user = await h.make_user(USER, language="en")
    tool = by_name()["buy_credits"]
    assert tool.side_effects
    await say(h, "TASKS")  # the user has written: the conversation exists
    conv = await conversation_id(h, user.id)
    sent: list[str] = []

    async def deliver(text: str = "", media: object = None, menu: object = None) -> None:
        sent.append(text)

    ctx = ToolContext(
        services=h.services,
        user_id=user.id,
        conversation_id=conv,
        channel="whatsapp",
        mode="pro",
        language="en",
        deliver=deliver,
    )
    result = await tool.run(ctx, {})
    assert result["success"] and result["menu_sent"] and len(result["packs"]) == 3
    assert sent[-1].startswith("💳 Buy credits") and "3. 600 credits — 2 000 FCFA" in sent[-1]
    menu = await get_menu(h.services, conv)
    assert menu is not None and menu["kind"] == "credits"
    assert "checkout.paystack.com" in await say(h, "3")  # the user answers the menu
    result = await tool.run(ctx, {"pack": 1})
    assert result["success"] and result["credits"] == 100 and "checkout.paystack.com" in sent[-1]
    assert (await tool.run(ctx, {"pack": 9}))["success"] is False


async def test_numbers_without_a_credits_menu_go_elsewhere_and_bad_choice_is_explained(h, paystack) -> None:
    await h.make_user(USER)
    h.llm.push_text("Tu veux dire quoi par 2 ?")
    assert "Tu veux dire quoi" in await say(h, "2")  # no menu pending: the agent answers
    await say(h, "ACHETER")
    assert "entre 1 et 3" in await say(h, "7")
    assert paystack.initialized == []


async def test_expired_menu_gets_a_hint(h, paystack) -> None:
    user = await h.make_user(USER)
    await say(h, "ACHETER")
    conv = await conversation_id(h, user.id)
    # What 30 minutes do: the state's key expires, and so does the menu's row.
    await h.services.state.kv_delete(f"menu:{conv}")
    async with h.services.sessions() as db:
        await db.execute(update(PendingMenu).where(PendingMenu.conversation_id == conv)
                         .values(expires_at=datetime.now(UTC) - timedelta(seconds=1)))
        await db.commit()
    assert "expiré" in await say(h, "2")
    assert paystack.initialized == []


async def test_not_offered_without_a_provider(make_harness) -> None:
    h = await make_harness()
    assert "buy_credits" not in [t.name for t in for_mode("child", h.settings)]
    await h.make_user(USER)
    assert "pas disponible" in await say(h, "ACHETER")


async def test_offered_in_child_and_pro(h) -> None:
    assert "buy_credits" in [t.name for t in for_mode("child", h.settings)]
    assert "buy_credits" in [t.name for t in for_mode("pro", h.settings)]
    assert "buy_credits" not in [t.name for t in for_mode("guest", h.settings)]


async def test_local_provider_same_flow(make_harness) -> None:
    h = await make_harness(PAYMENT_PROVIDER="local", PAYMENT_SECRET="local-secret")
    user = await h.make_user(USER)
    before = await balance(h)
    await say(h, "ACHETER")
    reply = await say(h, "1")
    async with h.services.sessions() as db:
        [payment] = list(await db.scalars(select(Payment)))
    assert f"{h.settings.public_base_url}/pay/{payment.reference}" in reply
    body = json.dumps(
        {"reference": payment.reference, "status": "paid", "amount": 500, "currency": "XOF"}
    ).encode()
    good = {"x-deblo-signature": local_signature("local-secret", body)}
    assert await post_webhook(h, body, {"x-deblo-signature": local_signature("nope", body)}, "local") == 401
    assert await balance(h) == before
    for _ in range(3):
        assert await post_webhook(h, body, good, "local") == 200
    assert await balance(h) == before + 100
    async with h.services.sessions() as db:
        count = await db.scalar(select(func.count(CreditEntry.id)).where(CreditEntry.reason == "purchase"))
    assert count == 1 and len(await ledger(h, user.id)) == 1


async def test_return_page_after_checkout_credits_nothing(h, paystack) -> None:
    await h.make_user(USER)
    before = await balance(h)
    status, headers, body = await h.get("/payments/done?trxref=deblo-1-x&reference=deblo-1-x")
    assert status == 200 and "text/html" in headers["Content-Type"] and "Merci" in body.decode()
    assert await balance(h) == before


@pytest.mark.parametrize("raw", ["100", "100:abc", "100:500,,", "0:500", "100:-5"])
def test_bad_credit_packs_setting_is_named(raw: str) -> None:
    from bot.config import ConfigError, load_settings

    with pytest.raises(ConfigError, match="CREDIT_PACKS"):
        load_settings({"CREDIT_PACKS": raw})


def test_credit_packs_setting_is_read_in_order() -> None:
    from bot.config import load_settings

    assert load_settings({"CREDIT_PACKS": " 50:300, 1000:4000 "}).credit_packs == ((50, 300), (1000, 4000))
