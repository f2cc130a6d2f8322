"""The outbox: replies Twilio did not take are kept and retried until it does, once each, in order."""

from __future__ import annotations

import asyncio
import itertools
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from bot.channel import formatting
from bot.channel.outbound import SendKeys, deliver_outbox, send_to_user, sending
from bot.storage.models import InboundMessage, OutboundMessage
from tests.support.harness import Harness
from tests.support.waiting import eventually

PHONE = "+2250700000071"
# Quick rounds in real time; the backoff itself runs on the test's clock.
OUTBOX = {"OUTBOX_POLL_S": "0.05", "OUTBOX_BACKOFF_S": "5", "OUTBOX_BACKOFF_MAX_S": "20"}


def long_reply() -> str:
    sentence = "Partie {p}, phrase {s} : les fractions partagent un tout."
    return "\n\n".join(" ".join(sentence.format(p=p, s=s) for s in range(14)) for p in range(6))


def parts(text: str) -> list[str]:
    return formatting.whatsapp_parts(formatting.to_whatsapp(text))


async def rows(h: Harness) -> list[OutboundMessage]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(OutboundMessage).order_by(OutboundMessage.id))).all())


async def inbound_statuses(h: Harness) -> list[str]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(InboundMessage.status).order_by(InboundMessage.id))).all())


async def test_twilio_failing_for_a_minute_every_reply_arrives_once_in_order(make_harness: Any) -> None:
    h = await make_harness(**OUTBOX, WHATSAPP_STREAM="paragraphs")
    await h.make_user(PHONE)
    first, second = long_reply(), "Et pour les décimaux, c'est pareil : une virgule."
    # The long answer streams on WhatsApp one message per paragraph (WHATSAPP_STREAM=paragraphs), so
    # many messages wait in the outbox together.
    expected = [formatting.to_whatsapp(p) for p in first.split("\n\n")] + parts(second)
    assert len(parts(first)) >= 3
    h.llm.push_text(first)
    h.llm.push_text(second)
    back_at = h.clock() + timedelta(minutes=1)
    h.twilio.fail_while("500", lambda: h.clock() < back_at)

    assert (await h.inbound(PHONE, "Explique-moi les fractions"))[0] == 200
    await h.settle()
    assert (await h.inbound(PHONE, "Et les décimaux ?"))[0] == 200
    await h.settle()
    # Both turns ran; nothing went out, nothing was given up, and no message claims a reply.
    assert h.twilio.sent == [] and await inbound_statuses(h) == ["delivering", "delivering"]
    waiting = await rows(h)
    assert len(waiting) == len(expected) and all(r.status == "queued" and r.sid is None for r in waiting)
    assert waiting[0].attempts == 1 and "ambiguous" in (waiting[0].last_error or "")

    tried = h.twilio.requests
    for _ in range(5):  # 50 s of the clock: the outbox keeps trying, Twilio keeps failing
        h.clock.advance(seconds=10)
        await asyncio.sleep(0.3)
    assert h.twilio.requests > tried and h.twilio.sent == []
    h.clock.advance(seconds=25)  # the minute is over: the next due attempt goes through

    async def all_sent() -> bool:
        return len(h.twilio.sent) >= len(expected)

    await eventually(all_sent)
    await h.twilio.idle()
    await asyncio.sleep(0.3)
    assert h.twilio.bodies() == expected  # each part once, in order, the second reply after the first
    sent = await rows(h)
    assert [r.sid for r in sent] == [m["Sid"] for m in h.twilio.sent]
    assert sent[0].attempts > 2
    assert await inbound_statuses(h) == ["done", "done"]
    # Each part left only after Twilio reported the previous one sent.
    events = h.twilio.events
    for previous, following in itertools.pairwise(sent):
        sent_at = next(t for t, kind, sid in events if sid == previous.sid and kind == "sent")
        created_at = next(t for t, kind, sid in events if sid == following.sid and kind == "created")
        assert created_at >= sent_at


async def test_refused_connections_then_back_the_reply_goes_once(make_harness: Any) -> None:
    h = await make_harness(**OUTBOX)
    await h.make_user(PHONE)
    h.llm.push_text("Réponse malgré la coupure.")
    await h.twilio.refuse_connections()
    assert (await h.inbound(PHONE, "Bonjour"))[0] == 200
    await h.settle()
    [row] = await rows(h)
    assert row.status == "queued" and row.sid is None and "connect" in (row.last_error or "").lower()
    await asyncio.sleep(0.5)  # a real short period without Twilio
    h.clock.advance(seconds=6)
    await asyncio.sleep(0.3)
    assert h.twilio.sent == []
    await h.twilio.accept_connections()
    h.clock.advance(seconds=20)

    async def sent() -> bool:
        return len(h.twilio.sent) >= 1

    await eventually(sent)
    await asyncio.sleep(0.3)
    assert h.twilio.bodies() == ["Réponse malgré la coupure."]
    assert await inbound_statuses(h) == ["done"]


async def test_a_refused_reply_is_not_retried_and_is_told_with_the_next_one(make_harness: Any) -> None:
    h = await make_harness(**OUTBOX)
    await h.make_user(PHONE)
    h.llm.push_text("Voici la règle des fractions équivalentes.")
    h.llm.push_text("Les décimaux ont une virgule.")
    h.llm.push_text("Bonne soirée !")
    h.twilio.fail_next("21211")
    await h.inbound(PHONE, "Explique les fractions")
    await h.settle()
    h.clock.advance(minutes=10)
    await asyncio.sleep(0.3)
    assert h.twilio.requests == 1 and h.twilio.sent == []  # a permanent refusal: never tried again
    [refused] = await rows(h)
    assert refused.status == "failed" and refused.error_code == "21211" and refused.failure_told_at is None
    assert await inbound_statuses(h) == ["undelivered"]

    await h.inbound(PHONE, "Et les décimaux ?")
    await h.settle()
    texts = await h.texts_to(PHONE)
    assert texts[0] == "Les décimaux ont une virgule."
    assert len(texts) == 2 and "n'a pas pu être remis" in texts[1]
    assert "Voici la règle des fractions équivalentes." in texts[1]
    told = next(r for r in await rows(h) if r.id == refused.id)
    assert told.failure_told_at is not None

    await h.inbound(PHONE, "Merci")
    await h.settle()
    assert (await h.texts_to(PHONE))[2:] == ["Bonne soirée !"]  # told once


async def test_a_failure_in_the_background_is_told_on_the_next_successful_send(make_harness: Any) -> None:
    h = await make_harness(**OUTBOX)
    user = await h.make_user(PHONE, language="en")
    down = {"now": True}
    h.twilio.fail_while("500", lambda: down["now"])
    result = await send_to_user(h.services, user, text="Your summary of fractions.")
    assert result.queued and not result.ok and result.reason == "queued"
    down["now"] = False
    h.twilio.fail_next("21211")  # the outbox's next try: refused for good
    h.clock.advance(seconds=6)

    async def given_up() -> bool:
        [row] = await rows(h)
        return row.status == "failed"

    await eventually(given_up)
    [row] = await rows(h)
    assert row.error_code == "21211" and row.failure_told_at is None and h.twilio.sent == []
    later = await send_to_user(h.services, user, text="Here is your next exercise.")
    assert later.ok
    texts = await h.texts_to(PHONE)
    assert texts[0] == "Here is your next exercise."
    assert "could not be delivered" in texts[1] and "Your summary of fractions." in texts[1]


async def test_a_replayed_step_does_not_send_again(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    with sending(keys=SendKeys("in:4242")):
        first = await send_to_user(h.services, user, text="Une seule fois, même rejoué.")
    with sending(keys=SendKeys("in:4242")):  # the same step run again
        again = await send_to_user(h.services, user, text="Une seule fois, même rejoué.")
    assert first.ok and again.ok and again.sids == first.sids
    assert h.twilio.bodies() == ["Une seule fois, même rejoué."]
    [row] = await rows(h)
    assert row.idempotency_key == "in:4242:0"


async def test_an_old_message_is_given_up_and_told(make_harness: Any) -> None:
    h = await make_harness(**OUTBOX, OUTBOX_MAX_AGE_S="3600")
    user = await h.make_user(PHONE)
    down_until = h.clock() + timedelta(hours=2)
    h.twilio.fail_while("503", lambda: h.clock() < down_until)
    result = await send_to_user(h.services, user, text="Trop tard pour celui-ci.")
    assert result.queued
    h.clock.advance(hours=2)

    async def given_up() -> bool:
        [row] = await rows(h)
        return row.status == "failed"

    await eventually(given_up)
    [row] = await rows(h)
    assert "within" in (row.last_error or "") and h.twilio.sent == []
    assert (await send_to_user(h.services, user, text="Nouveau message.")).ok
    texts = await h.texts_to(PHONE)
    assert texts[0] == "Nouveau message." and "Trop tard pour celui-ci." in texts[1]


async def test_a_round_sends_nothing_when_nothing_is_due(harness: Harness) -> None:
    assert await deliver_outbox(harness.services) == 0


async def test_a_send_cut_short_by_a_crash_is_looked_up_not_sent_twice(make_harness: Any) -> None:
    h = await make_harness(**OUTBOX)
    user = await h.make_user(PHONE)
    to = f"whatsapp:{PHONE}"
    fields = {"to": to, "from_": h.settings.twilio_whatsapp_from, "body": "Parti juste avant la panne.",
              "status_callback": h.settings.public_base_url + "/twilio/status"}
    # Twilio took it, then the process died before recording the SID.
    taken = await h.services.twilio.create_message(fields)
    lost = {**fields, "body": "Jamais parti."}
    async with h.services.sessions() as db:
        for body, payload in (("Parti juste avant la panne.", fields), ("Jamais parti.", lost)):
            db.add(OutboundMessage(user_id=user.id, channel="whatsapp", to_addr=to, body=body, kind="reply",
                                   status="sending", payload=payload, attempts=0, created_at=h.clock(),
                                   updated_at=h.clock()))
        await db.commit()
    await asyncio.sleep(0.3)
    assert len(h.twilio.sent) == 1  # still within the time a send may take: left alone
    h.clock.advance(minutes=5)

    async def both_done() -> bool:
        return all(r.sid for r in await rows(h))

    await eventually(both_done)
    first, second = await rows(h)
    assert first.sid == taken.sid and second.sid == h.twilio.sent[1]["Sid"]
    assert h.twilio.bodies() == ["Parti juste avant la panne.", "Jamais parti."]
