"""The payment webhook reads the whole body, however the provider's TCP segments fall."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from urllib.parse import urlsplit

from bot.web.payment_webhook import MAX_BODY
from tests.support.payments import SECRET, USER, balance, buy_pack_two, ledger

PATH = "/payments/webhook/paystack"


def realistic(event: bytes) -> bytes:
    """A charge.success the size Paystack sends (about 3 KB): customer, authorization and log."""
    payload = json.loads(event)
    payload["data"].update({
        "customer": {"id": 84312, "first_name": None, "last_name": None, "email": "user1@deblo.ai",
                     "customer_code": "CUS_xnxdt6s1zg1f4nx", "phone": None, "metadata": {},
                     "risk_action": "default"},
        "authorization": {"authorization_code": "AUTH_8dfhjjdt", "bin": "000000", "last4": "0000",
                          "exp_month": "12", "exp_year": "2030", "channel": "mobile_money",
                          "card_type": "", "bank": "MTN", "country_code": "CI", "brand": "MTN",
                          "reusable": False, "signature": None, "account_name": None},
        "log": {"start_time": 1741600000, "time_spent": 9, "attempts": 1, "errors": 0, "success": True,
                "mobile": False, "input": [],
                "history": [{"type": "action", "message": f"Step {i}: waiting for the customer to approve "
                             "the mobile money prompt on the phone", "time": i} for i in range(20)]},
        "fees_breakdown": None, "split": {}, "plan": {}, "subaccount": {}, "source": None,
    })
    body = json.dumps(payload).encode()
    assert 2500 < len(body) < MAX_BODY
    return body


async def raw_post(base_url: str, head: bytes, pieces: list[bytes], pause_s: float = 0.15) -> int:
    """Writes the request through a raw socket, each piece its own TCP segment, pausing between."""
    address = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(address.hostname, address.port)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no coalescing of the pieces
    try:
        writer.write(head)
        await writer.drain()
        for piece in pieces:
            await asyncio.sleep(pause_s)
            writer.write(piece)
            await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), 10)
        return int(status_line.split()[1])
    finally:
        writer.close()
        await writer.wait_closed()


def request_head(body_length: int | None, headers: dict[str, str]) -> bytes:
    lines = [f"POST {PATH} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    chunked = "Transfer-Encoding: chunked"
    lines.append(f"Content-Length: {body_length}" if body_length is not None else chunked)
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def test_charge_success_in_several_segments_is_credited(h, paystack) -> None:
    user = await h.make_user(USER)
    before = await balance(h)
    payment = await buy_pack_two(h, paystack)
    body = realistic(paystack.pay(payment.reference))
    cuts = [0, 700, 1000, 1900, len(body)]
    pieces = [body[a:b] for a, b in itertools.pairwise(cuts)]
    status = await raw_post(h.base_url, request_head(len(body), paystack.signed(body)), pieces)
    assert status == 200
    await h.twilio.idle()
    assert await balance(h) == before + 250
    assert len(await ledger(h, user.id)) == 1
    assert paystack.verified == [payment.reference]


async def test_chunked_body_in_several_segments_is_credited(h, paystack) -> None:
    await h.make_user(USER)
    before = await balance(h)
    payment = await buy_pack_two(h, paystack)
    body = realistic(paystack.pay(payment.reference))
    half = len(body) // 2
    chunks = [body[:half], body[half:]]
    pieces = [f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks] + [b"0\r\n\r\n"]
    assert await raw_post(h.base_url, request_head(None, paystack.signed(body)), pieces) == 200
    await h.twilio.idle()
    assert await balance(h) == before + 250


async def test_bodies_above_the_cap_get_413_and_credit_nothing(h, paystack) -> None:
    await h.make_user(USER)
    before = await balance(h)
    payment = await buy_pack_two(h, paystack)
    event = json.loads(paystack.pay(payment.reference))
    event["padding"] = "x" * MAX_BODY
    big = json.dumps(event).encode()
    headers = paystack.signed(big)
    declared = request_head(len(big), headers)
    assert await raw_post(h.base_url, declared, [big[:1000]], pause_s=0.05) == 413  # refused from its length
    pieces = [f"{len(big[i:i + 65536]):x}\r\n".encode() + big[i:i + 65536] + b"\r\n"
              for i in range(0, len(big), 65536)] + [b"0\r\n\r\n"]
    assert await raw_post(h.base_url, request_head(None, headers), pieces, pause_s=0.01) == 413
    async with h.session.post(f"{h.base_url}{PATH}", data=big, headers=headers) as resp:
        assert resp.status == 413
        assert (await resp.json())["error"] == "body too large"
    assert await balance(h) == before
    assert paystack.verified == []


async def test_a_body_cut_short_is_not_credited(h, paystack) -> None:
    """A connection that closes before the declared length never reaches the HMAC check as a whole."""
    await h.make_user(USER)
    before = await balance(h)
    payment = await buy_pack_two(h, paystack)
    body = realistic(paystack.pay(payment.reference))
    address = urlsplit(h.base_url)
    reader, writer = await asyncio.open_connection(address.hostname, address.port)
    writer.write(request_head(len(body), paystack.signed(body)) + body[:1000])
    await writer.drain()
    writer.write_eof()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    assert b" 200 " not in answer.split(b"\r\n", 1)[0]
    assert await balance(h) == before
    assert SECRET not in answer.decode(errors="replace")
