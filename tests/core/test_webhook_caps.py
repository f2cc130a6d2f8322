"""The webhook's cheap refusals: body size (WEBHOOK_MAX_BYTES), field count, one HMAC per genuine
request, and only the configured AccountSid (bot.channel.webhook_checks)."""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import func, select

from bot import logs
from bot.channel.web import SPOOL
from bot.storage.models import InboundMessage, OutboundMessage
from tests.support.harness import Harness, new_sid, sign

PHONE = "+2250700000001"
INBOUND = "/twilio/inbound"


async def stored(h: Harness) -> int:
    async with h.services.sessions() as db:
        return int(await db.scalar(select(func.count(InboundMessage.id))) or 0)


def form(h: Harness, body: str = "Salut", **extra: str) -> dict[str, str]:
    sid = new_sid()
    return {"MessageSid": sid, "SmsMessageSid": sid, "AccountSid": h.settings.twilio_account_sid,
            "From": f"whatsapp:{PHONE}", "To": "whatsapp:+14155238886", "Body": body, "NumMedia": "0",
            **extra}


async def refusals(h: Harness, channel: str, result: str) -> float:
    """The INBOUND counter's value for this refusal, as /metrics shows it (it counts for the process)."""
    _, _, body = await h.scrape()
    prefix = f'deblo_inbound_total{{channel="{channel}",result="{result}"}} '
    lines = [line for line in body.decode().splitlines() if line.startswith(prefix)]
    return float(lines[0].removeprefix(prefix)) if lines else 0.0


def count_twilio_macs(monkeypatch: pytest.MonkeyPatch, token: str) -> list[int]:
    """Counts the HMACs computed with the auth token, whoever computes them (ours with the one-shot
    `hmac.digest`, twilio's with `hmac.new`)."""
    calls = [0]
    real_new, real_digest = hmac.new, hmac.digest

    def counting_new(key: Any, msg: Any = None, digestmod: Any = "") -> Any:
        if key == token.encode():
            calls[0] += 1
        return real_new(key, msg, digestmod)

    def counting_digest(key: Any, msg: Any, digest: Any) -> bytes:
        if key == token.encode():
            calls[0] += 1
        return real_digest(key, msg, digest)

    monkeypatch.setattr(hmac, "new", counting_new)
    monkeypatch.setattr(hmac, "digest", counting_digest)
    return calls


async def test_a_signed_body_over_64_kb_is_refused_and_not_stored(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    assert h.settings.webhook_max_bytes == 65536
    before = await refusals(h, "unknown", "too_large")
    status, _ = await h.post_form(INBOUND, form(h, "x" * 70_000))  # signed, with a Content-Length
    assert status == 413
    status, _ = await h.post_form(INBOUND, form(h, "x" * 60_000))  # under the cap: taken
    assert status == 200
    assert await stored(h) == 1
    assert await refusals(h, "unknown", "too_large") == before + 1


async def test_a_flood_of_oversized_bodies_is_counted_each_and_logged_once(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    h = harness
    logs.forget_repeats()
    before = await refusals(h, "unknown", "too_large")
    with caplog.at_level(logging.WARNING, logger="bot.channel.web"):
        for _ in range(6):
            assert (await h.post_form(INBOUND, form(h, "x" * 70_000)))[0] == 413
            assert (await h.post_form(INBOUND, form(h), signed=False))[0] == 403  # no signature
    lines = [r for r in caplog.records if r.getMessage() == "webhook body too large"]
    assert len(lines) == 1 and not hasattr(lines[0], "repeated")
    assert len([r for r in caplog.records if r.getMessage() == "webhook without signature"]) == 1
    assert await refusals(h, "unknown", "too_large") == before + 6
    assert await refusals(h, "unknown", "rejected") >= 6


def test_a_sampled_warning_says_how_many_it_stands_for(caplog: pytest.LogCaptureFixture) -> None:
    logs.forget_repeats()
    log = logging.getLogger("tests.sampled")
    with caplog.at_level(logging.WARNING, logger="tests.sampled"):
        written = [logs.warning_sampled(log, "refused", {"peer": "p"}, every_s=10, now=t)
                   for t in (100.0, 101.0, 105.0, 109.9, 110.0, 111.0, 125.0)]
        logs.warning_sampled(log, "another", now=101.0)  # its own window
    assert written == [True, False, False, False, True, False, True]
    lines = [r for r in caplog.records if r.getMessage() == "refused"]
    assert [getattr(r, "repeated", 0) for r in lines] == [0, 3, 1]
    assert all(getattr(r, "peer", None) == "p" for r in lines)
    assert [r.getMessage() for r in caplog.records].count("another") == 1


async def test_a_chunked_body_is_cut_at_the_cap(make_harness: Any) -> None:
    h = await make_harness(WEBHOOK_MAX_BYTES="4096")
    params = form(h, "y" * 8000)
    from urllib.parse import urlencode

    raw = urlencode(params).encode()

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(raw), 1000):
            yield raw[i:i + 1000]

    headers = {"Content-Type": "application/x-www-form-urlencoded",
               "X-Twilio-Signature": sign(h.settings.twilio_auth_token, h.settings.public_base_url + INBOUND,
                                          params)}
    async with h.session.post(h.base_url + INBOUND, data=chunks(), headers=headers) as resp:
        assert resp.request_info.headers.get("Transfer-Encoding") == "chunked"
        assert resp.status == 413
    assert (await h.post_form(INBOUND, form(h, "court")))[0] == 200  # a small one still goes in
    assert await stored(h) == 1


async def test_a_declared_length_over_the_cap_is_answered_before_the_body_is_sent(harness: Harness) -> None:
    h = harness
    host, port = h.base_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"POST {INBOUND} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 10000000\r\n"
                 "Content-Type: application/x-www-form-urlencoded\r\n\r\nBody=abc".encode())
    await writer.drain()
    try:
        status_line = await asyncio.wait_for(reader.readline(), 5)  # the rest is never sent
        # And the connection ends: the bot does not sit reading the 10 MB it was promised.
        try:
            await asyncio.wait_for(reader.read(), 5)
        except ConnectionResetError:
            pass  # closed with the promised bytes unread: a reset is a close too
    finally:
        writer.close()
    assert status_line.startswith(b"HTTP/1.1 413")


async def test_too_many_fields_are_refused_before_any_signature_is_computed(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = harness
    params = form(h, **{f"X{i}": "1" for i in range(250)})  # a few KB: under the size cap
    signature = sign(h.settings.twilio_auth_token, h.settings.public_base_url + INBOUND, params)
    macs = count_twilio_macs(monkeypatch, h.settings.twilio_auth_token)
    status, _ = await h.post_form(INBOUND, params, signature=signature)
    assert status == 413 and macs[0] == 0
    assert await stored(h) == 0


async def test_one_hmac_for_a_genuine_request_and_each_url_variant_once_for_a_forged_one(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = harness
    await h.make_user(PHONE)
    good, forged = form(h), form(h)
    url = h.settings.public_base_url + INBOUND
    good_sig = sign(h.settings.twilio_auth_token, url, good)
    macs = count_twilio_macs(monkeypatch, h.settings.twilio_auth_token)
    assert (await h.post_form(INBOUND, good, signature=good_sig))[0] == 200
    assert macs[0] == 1
    macs[0] = 0
    assert (await h.post_form(INBOUND, forged, signature="A" * 28))[0] == 403
    assert macs[0] == 2  # with and without the port: the exact URL is one of them, not a third MAC


async def test_the_url_variants_twilio_validate_accepts_are_still_accepted(make_harness: Any) -> None:
    h = await make_harness(PUBLIC_BASE_URL="https://bot.example.org")
    await h.make_user(PHONE)
    with_port = form(h)
    signed_url = "https://bot.example.org:443" + INBOUND
    assert (await h.post_form(INBOUND, with_port, signed_url=signed_url))[0] == 200
    # The test app's own URL has a port (127.0.0.1:N): Twilio's validator also takes it without.
    other = await make_harness()
    without_port = form(other)
    unported = other.settings.public_base_url.rsplit(":", 1)[0] + INBOUND
    assert (await other.post_form(INBOUND, without_port, signed_url=unported))[0] == 200
    assert await stored(h) == 2  # the two apps share the test's database


async def test_healthz_answers_while_oversized_forms_are_refused(harness: Harness) -> None:
    h = harness
    oversized = b"Body=" + b"z" * (2 * 1024 * 1024)
    before = await refusals(h, "unknown", "too_large")

    async def flood() -> int:
        async with h.session.post(h.base_url + INBOUND, data=oversized,
                                  headers={"Content-Type": "application/x-www-form-urlencoded"}) as resp:
            return resp.status

    async def health() -> list[int]:
        answers = []
        for _ in range(10):
            answers.append((await h.get("/healthz"))[0])
            await asyncio.sleep(0)
        return answers

    *floods, healthz = await asyncio.gather(*(flood() for _ in range(20)), health())
    assert floods == [413] * 20
    assert healthz == [200] * 10
    assert await refusals(h, "unknown", "too_large") == before + 20


async def test_another_account_is_refused_even_correctly_signed(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    h = harness
    await h.make_user(PHONE)
    before = await refusals(h, "unknown", "wrong_account")
    other = form(h, AccountSid="AC" + "f" * 32)
    with caplog.at_level(logging.WARNING, logger="bot.channel.web"):
        assert (await h.post_form(INBOUND, other))[0] == 403  # signed with the auth token
    assert any(r.getMessage() == "webhook for another Twilio account" for r in caplog.records)
    none = form(h)
    del none["AccountSid"]
    assert (await h.post_form(INBOUND, none))[0] == 403
    assert await stored(h) == 0
    assert not h.runner.app[SPOOL].pending
    assert await refusals(h, "unknown", "wrong_account") == before + 2


async def test_a_status_callback_of_another_account_changes_nothing(harness: Harness) -> None:
    h = harness
    sid = new_sid()
    async with h.services.sessions() as db:
        db.add(OutboundMessage(channel="whatsapp", to_addr=f"whatsapp:{PHONE}", body="x", sid=sid,
                               status="sent", created_at=h.clock()))
        await db.commit()
    callback = {"MessageSid": sid, "MessageStatus": "failed", "ErrorCode": "30008",
                "AccountSid": "AC" + "e" * 32}
    assert (await h.post_form("/twilio/status", callback))[0] == 403
    assert not h.runner.app[SPOOL].pending
    async with h.services.sessions() as db:
        row = await db.scalar(select(OutboundMessage).where(OutboundMessage.sid == sid))
    assert row is not None and (row.status, row.error_code) == ("sent", None)
    assert await h.services.state.kv_get(f"outstatus:{sid}") is None
    # The same callback from our account is recorded.
    ours = {**callback, "AccountSid": h.settings.twilio_account_sid}
    assert (await h.post_form("/twilio/status", ours))[0] == 200
    async with h.services.sessions() as db:
        row = await db.scalar(select(OutboundMessage).where(OutboundMessage.sid == sid))
    assert row is not None and row.status == "failed"
