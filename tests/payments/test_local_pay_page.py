"""The local provider's `/pay/<reference>` page: someone trying the bot opens the link it sent,
confirms, and gets the credits once, as a real payment's webhook gives them. Another site cannot
post the form (its token), an unknown reference is 404, and with a real provider there is no page."""

from __future__ import annotations

import re

from sqlalchemy import select

from bot.storage.models import Payment
from tests.support.payments import USER, balance, ledger, say


async def _post(h, path: str, form: dict[str, str]) -> tuple[int, str]:
    async with h.session.post(h.base_url + path, data=form) as resp:
        return resp.status, await resp.text()


async def test_the_pay_page_confirms_a_local_payment_once(make_harness) -> None:
    h = await make_harness(PAYMENT_PROVIDER="local", PAYMENT_SECRET="local-secret")
    user = await h.make_user(USER)
    before = await balance(h)
    await say(h, "ACHETER")
    reply = await say(h, "1")
    async with h.services.sessions() as db:
        payment = await db.scalar(select(Payment))
    path = f"/pay/{payment.reference}"
    assert f"{h.settings.public_base_url}{path}" in reply
    status, headers, body = await h.get(path)
    page = body.decode()
    assert status == 200 and "Confirmer le paiement d’essai" in page and "500 XOF" in page
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert headers["Cache-Control"] == "no-store"
    found = re.search(r'name="token" value="([0-9a-f]+)"', page)
    assert found is not None, page[:300]
    token = found.group(1)
    # A form posted from elsewhere has no token, or a wrong one: nothing is credited.
    assert (await _post(h, path, {}))[0] == 403
    assert (await _post(h, path, {"token": "0" * 64}))[0] == 403
    assert await balance(h) == before
    status, page = await _post(h, path, {"token": token})
    assert status == 200 and "Payé : les crédits sont ajoutés" in page and "Confirmer" not in page
    await h.twilio.idle()
    assert await balance(h) == before + 100
    # The same form posted again (a double tap, the back button) credits nothing more.
    assert (await _post(h, path, {"token": token}))[0] == 200
    await h.twilio.idle()
    assert await balance(h) == before + 100 and len(await ledger(h, user.id)) == 1
    assert len([t for t in await h.texts_to(USER) if "Paiement reçu" in t]) == 1
    assert (await h.get("/pay/deblo-1-0000000000000000"))[0] == 404


async def test_no_pay_page_with_a_real_provider(h, paystack) -> None:
    await h.make_user(USER)
    async with h.services.sessions() as db:
        db.add(Payment(user_id=(await h.user(USER)).id, provider="paystack", reference="deblo-1-abc",
                       pack="1", amount=500, currency="XOF", credits=100))
        await db.commit()
    assert (await h.get("/pay/deblo-1-abc"))[0] == 404
    assert (await _post(h, "/pay/deblo-1-abc", {"token": "x"}))[0] == 404
