"""POST /twilio/inbound: signatures, malformed requests, duplicates, real payloads, identities."""

from __future__ import annotations

import json
from typing import Any

from multidict import MultiDict
from sqlalchemy import func, select
from twilio.request_validator import RequestValidator

from bot.storage.models import InboundMessage, User
from tests.support.harness import Harness, new_sid, sign
from tests.support.twilio_corpus import corpus

PHONE = "+2250700000001"


async def count(h: Harness, model: Any) -> int:
    async with h.services.sessions() as db:
        return int(await db.scalar(select(func.count(model.id))) or 0)


async def test_valid_signature_is_accepted_stored_and_answered(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    h.llm.push_text("Bonjour !")
    status, body = await h.inbound(PHONE, "Salut")
    assert status == 200
    assert body.endswith("<Response/>")
    await h.settle()
    assert await count(h, InboundMessage) == 1
    assert await h.texts_to(PHONE) == ["Bonjour !"]


async def test_missing_signature_is_refused_and_nothing_stored(harness: Harness) -> None:
    h = harness
    status, _ = await h.inbound(PHONE, "Salut", signed=False)
    assert status == 403
    assert await count(h, InboundMessage) == 0
    assert await count(h, User) == 0


async def test_wrong_signature_is_refused_and_nothing_stored(harness: Harness) -> None:
    h = harness
    params = {"MessageSid": new_sid(), "From": f"whatsapp:{PHONE}", "Body": "Salut"}
    good = sign(h.settings.twilio_auth_token, h.settings.public_base_url + "/twilio/inbound", params)
    wrong = ("A" if good[0] != "A" else "B") + good[1:]
    status, _ = await h.post_form("/twilio/inbound", params, signature=wrong)
    assert status == 403
    # Signed with another account's token.
    other = sign("not-the-token", h.settings.public_base_url + "/twilio/inbound", params)
    assert (await h.post_form("/twilio/inbound", params, signature=other))[0] == 403
    # A parameter changed after signing.
    tampered = {**params, "Body": "Salut!"}
    assert (await h.post_form("/twilio/inbound", tampered, signature=good))[0] == 403
    assert await count(h, InboundMessage) == 0


async def test_signature_for_the_proxy_public_url(make_harness: Any) -> None:
    # Behind a TLS proxy: Twilio signs https://bot.example.org/..., the app listens on 127.0.0.1.
    h = await make_harness(PUBLIC_BASE_URL="https://bot.example.org")
    await h.make_user(PHONE)
    params = {"MessageSid": new_sid(), "From": f"whatsapp:{PHONE}", "Body": "Salut", "NumMedia": "0",
              "AccountSid": h.settings.twilio_account_sid}
    status, _ = await h.post_form("/twilio/inbound", params)  # signed for the public URL
    assert status == 200
    # The same request signed for the address the app is bound to is not what Twilio signs.
    local = sign(h.settings.twilio_auth_token, h.base_url + "/twilio/inbound", params)
    status, _ = await h.post_form("/twilio/inbound", {**params, "MessageSid": new_sid()}, signature=local)
    assert status == 403
    # A query string is part of what is signed.
    status, _ = await h.post_form("/twilio/inbound?src=wa", {**params, "MessageSid": new_sid()})
    assert status == 200
    status, _ = await h.post_form(
        "/twilio/inbound?src=wa", {**params, "MessageSid": new_sid()},
        signed_url="https://bot.example.org/twilio/inbound",
    )
    assert status == 403
    await h.settle()
    assert await count(h, InboundMessage) == 2


async def test_malformed_requests_get_400_and_nothing_is_stored(harness: Harness) -> None:
    h = harness
    account = {"AccountSid": h.settings.twilio_account_sid}
    no_from = {"MessageSid": new_sid(), "Body": "x", **account}
    assert (await h.post_form("/twilio/inbound", no_from))[0] == 400
    no_sid = {"From": f"whatsapp:{PHONE}", "Body": "x", **account}
    assert (await h.post_form("/twilio/inbound", no_sid))[0] == 400
    not_a_number = {"MessageSid": new_sid(), "From": "whatsapp:hello", "Body": "x", **account}
    assert (await h.post_form("/twilio/inbound", not_a_number))[0] == 400
    bad_media_count = {"MessageSid": new_sid(), "From": PHONE, "Body": "x", "NumMedia": "many", **account}
    assert (await h.post_form("/twilio/inbound", bad_media_count))[0] == 400
    # Bytes that are not UTF-8, raw and percent-encoded.
    sig = sign(h.settings.twilio_auth_token, h.settings.public_base_url + "/twilio/inbound", {})
    for raw in (b"MessageSid=SM1&From=%2B2250700000001&Body=caf%E9", b"MessageSid=SM2&Body=\xff\xfe"):
        status, _ = await h.post_form("/twilio/inbound", {}, signature=sig, raw_body=raw)
        assert status == 400
    # Not a form at all.
    status, _ = await h.post_form("/twilio/inbound", {}, signature=sig, raw_body=b'{"From": "x"}',
                                  content_type="application/json")
    assert status == 400
    assert await count(h, InboundMessage) == 0
    assert await count(h, User) == 0


async def test_duplicate_message_sid_is_handled_once(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    h.llm.push_text("Une seule réponse.")
    sid = new_sid()
    first = await h.inbound(PHONE, "Salut", sid=sid)
    second = await h.inbound(PHONE, "Salut", sid=sid)
    await h.settle()
    third = await h.inbound(PHONE, "Salut", sid=sid)  # a retry after the turn finished
    await h.settle()
    assert first[0] == second[0] == third[0] == 200
    assert await count(h, InboundMessage) == 1
    assert await h.texts_to(PHONE) == ["Une seule réponse."]


async def test_corpus_payloads_are_accepted(harness: Harness) -> None:
    """Real Twilio bodies (WhatsApp text, SMS via a Messaging Service, a WhatsApp button reply
    carrying a BSUID), signed for our URL and carrying our AccountSid, are stored with the right
    channel and identity."""
    h = harness
    url = h.settings.public_base_url + "/twilio/inbound"
    account = h.settings.twilio_account_sid
    for name in ("01-whatsapp-inbound-text.json", "06-sms-inbound-text.json",
                 "10-whatsapp-inbound-button-reply-with-reply-context.json"):
        params = [(k, account if k == "AccountSid" else v) for k, v in corpus(name)["params"]]
        status, _ = await h.post_form("/twilio/inbound", params, signed_url=url)
        assert status == 200, name
    await h.settle()
    async with h.services.sessions() as db:
        rows = (await db.scalars(select(InboundMessage).order_by(InboundMessage.id))).all()
        assert [r.channel for r in rows] == ["whatsapp", "sms", "whatsapp"]
        assert [r.body for r in rows] == ["test", "Normal text message", "Konfirmasi"]
        button_user = await db.get(User, rows[2].user_id)
        assert button_user is not None
        assert button_user.phone == "+6285176810035"
        assert button_user.external_id == "ID.4566546130240823"
        assert button_user.display_name == "teknisee"
        sms_user = await db.get(User, rows[1].user_id)
        assert sms_user is not None and sms_user.phone == "+19168720460"


def test_signature_helper_matches_twilio_vectors() -> None:
    """The tests sign webhooks with `sign`: it must give Twilio's own values."""
    vectors = corpus("09-signature-validation-vectors.json")["vectors"]
    checked = 0
    for v in vectors:
        if v.get("raw_body"):
            continue
        params = [tuple(p) for p in v["params"]]
        validator = RequestValidator(v["auth_token"])
        assert validator.validate(v["url"], MultiDict(params), v["expected_signature"])
        if "validator_result" not in v:
            assert sign(v["auth_token"], v["url"], params) == v["expected_signature"], v["name"]
        checked += 1
    assert checked >= 6


async def test_same_number_on_whatsapp_and_sms_is_one_user(harness: Harness) -> None:
    h = harness
    await h.inbound(PHONE, "Bonjour", channel="whatsapp", extra={"ProfileName": "Awa Koné"})
    await h.inbound(PHONE, "Bonjour", channel="sms")
    await h.inbound("002250700000001".replace("00", "+", 1), "Encore", channel="sms")
    await h.settle()
    async with h.services.sessions() as db:
        users = (await db.scalars(select(User))).all()
        assert len(users) == 1
        assert users[0].phone == PHONE and users[0].display_name == "Awa Koné"
        assert users[0].last_channel == "sms"


async def test_bsuid_identifies_the_user_and_the_number_is_an_alias(harness: Harness) -> None:
    h = harness
    # A user who hides their number: From is the BSUID itself.
    status, _ = await h.inbound("whatsapp:CI.1234567890123", "Bonjour",
                                extra={"ExternalUserId": "CI.1234567890123"})
    assert status == 200
    await h.settle()
    # Replies go to the BSUID address while no number is known.
    assert [m["To"] for m in h.twilio.sent] == ["whatsapp:CI.1234567890123"]
    # Later the number is known too: same user, the number becomes an alias.
    await h.inbound(PHONE, "Re-bonjour", extra={"ExternalUserId": "whatsapp:CI.1234567890123"})
    # The number alone (e.g. by SMS) still reaches the same user.
    await h.inbound(PHONE, "Par SMS", channel="sms")
    await h.settle()
    async with h.services.sessions() as db:
        users = (await db.scalars(select(User))).all()
        assert len(users) == 1
        assert users[0].external_id == "CI.1234567890123" and users[0].phone == PHONE
    assert h.twilio.sent[-1]["To"] == PHONE  # the SMS reply


async def test_health_and_metrics(harness: Harness) -> None:
    h = harness
    status, _, body = await h.get("/healthz")
    assert status == 200 and json.loads(body) == {"ok": True}
    status, _, body = await h.get("/readyz")
    assert status == 200 and json.loads(body) == {"ready": True, "database": True, "state": True}
    await h.inbound(PHONE, "Salut")
    await h.settle()
    status, headers, body = await h.scrape()
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert b'deblo_inbound_total{channel="whatsapp",result="accepted"}' in body
