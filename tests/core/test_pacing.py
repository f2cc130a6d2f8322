"""Paced sends: no sender sends more than TWILIO_SENDER_MPS a second, a 20429 is retried and never
sent twice, and a message that cannot leave within SEND_MAX_AGE_S is dropped, recorded, counted.

The stand-in answers 429 / 20429 beyond its own rate per sender, counted per second of a virtual
clock (tests/support/virtual_time.py) that the pacer and the Twilio client's backoff sleep on:
counts per second and order, never times. On `postgres` the schedule is Redis's (one Lua script
for every process), on `sqlite` the process's own.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from typing import Any

import pytest
import redis.exceptions
from sqlalchemy import select

from bot import metrics
from bot.channel.outbound import SendResult, send_to_user
from bot.channel.pacing import BATCH_AHEAD_S, Pacer, SenderRates
from bot.config_values import DEFAULT_SENDER_MPS
from bot.lanes import as_background
from bot.storage.models import OutboundMessage, User
from tests.support.harness import SMS_FROM, WHATSAPP_FROM, Harness
from tests.support.virtual_time import VirtualTime


def paced(h: Harness, vt: VirtualTime, mps: str) -> None:
    """The harness's Twilio client paced at `mps` (TWILIO_SENDER_MPS's form) on the virtual clock,
    through the harness's shared state (Redis on postgres); the stand-in counts on the same clock."""
    from bot.config import load_settings

    rates = load_settings({"TWILIO_SENDER_MPS": mps}).twilio_sender_mps
    h.services.twilio.pacer = Pacer(h.services.state, SenderRates(rates), clock=vt, sleep=vt.sleep)
    h.twilio.rate_clock = vt


async def users(h: Harness, count: int, first: int, channel: str = "whatsapp") -> list[User]:
    return [await h.make_user(f"+22507{first + i:08d}", last_channel=channel) for i in range(count)]


async def each_in_turn(h: Harness, user: User, texts: list[str]) -> list[SendResult]:
    """One user's messages, one after the other (their order is theirs to keep)."""
    return [await send_to_user(h.services, user, text=text) for text in texts]


def per_second(h: Harness, sender: str) -> Counter[int]:
    """How many messages of `sender` the stand-in took in each second of the virtual clock."""
    return Counter(int(at) for s, at in h.twilio.taken if s == sender)


def test_twilio_sender_mps_reads_one_number_or_pairs() -> None:
    from bot.config import ConfigError, load_settings

    assert dict(load_settings({}).twilio_sender_mps) == {"whatsapp": 80, "sms": 1} == dict(DEFAULT_SENDER_MPS)
    assert dict(load_settings({"TWILIO_SENDER_MPS": "40"}).twilio_sender_mps) == {"whatsapp": 40, "sms": 1}
    rates = SenderRates(load_settings({"TWILIO_SENDER_MPS": "whatsapp=80,sms=1,+15005550007=10"})
                        .twilio_sender_mps)
    assert rates.of(WHATSAPP_FROM) == 80 and rates.of(SMS_FROM) == 1 and rates.of("+15005550007") == 10
    for bad in ("fast", "sms=0", "whatsapp=1.5"):
        with pytest.raises(ConfigError, match="TWILIO_SENDER_MPS"):
            load_settings({"TWILIO_SENDER_MPS": bad})


async def test_each_sender_keeps_its_pace_and_twilio_refuses_nothing(make_harness: Any) -> None:
    h = await make_harness()
    vt = VirtualTime()
    paced(h, vt, "whatsapp=5,sms=1")
    h.twilio.sender_mps = {WHATSAPP_FROM: 5, SMS_FROM: 1}  # Twilio's own limit, as strict
    h.twilio.send_callbacks = False
    students = await users(h, 4, 100)
    parents = await users(h, 2, 200, channel="sms")
    texts = {u.id: [f"Message {n} pour {u.phone}" for n in range(3)] for u in students}
    texts |= {u.id: [f"SMS {n} pour {u.phone}" for n in range(2)] for u in parents}
    results = await vt.run([each_in_turn(h, u, texts[u.id]) for u in students + parents])

    assert all(r.ok for rs in results for r in rs)
    assert h.twilio.rate_refused == 0
    whatsapp, sms = per_second(h, WHATSAPP_FROM), per_second(h, SMS_FROM)
    # 12 WhatsApp messages at 5 a second, 4 SMS at 1 a second: each second full, none over.
    assert sorted(whatsapp.values()) == [2, 5, 5] and len(whatsapp) == math.ceil(12 / 5)
    assert set(sms.values()) == {1} and len(sms) == 4
    bodies = h.twilio.bodies()
    assert sorted(bodies) == sorted(t for ts in texts.values() for t in ts)  # each once
    for user in students + parents:  # and each user's in the order they were sent
        assert [b for b in bodies if b.endswith(user.phone or "")] == texts[user.id]


async def test_beyond_twilio_s_rate_20429_is_retried_and_nothing_goes_twice(make_harness: Any) -> None:
    # The bot's pace is twice what this Twilio takes (a lower limit, another deployment on the
    # account): Twilio refuses, each refusal is retried with backoff, and each message goes once.
    h = await make_harness(TWILIO_BACKOFF_S="0.5", TWILIO_SEND_ATTEMPTS="12")
    vt = VirtualTime()
    paced(h, vt, "whatsapp=8")
    h.twilio.sender_mps = {WHATSAPP_FROM: 4}
    h.twilio.send_callbacks = False
    limited = metrics.TWILIO_RATE_LIMITED.labels("whatsapp")
    before = limited._value.get()
    students = await users(h, 6, 300)
    texts = {u.id: [f"Question {n} pour {u.phone}" for n in range(2)] for u in students}
    results = await vt.run([each_in_turn(h, u, texts[u.id]) for u in students])

    assert all(r.ok for rs in results for r in rs)
    assert h.twilio.rate_refused > 0 and limited._value.get() - before == h.twilio.rate_refused
    assert max(per_second(h, WHATSAPP_FROM).values()) <= 4
    bodies = h.twilio.bodies()
    assert len(bodies) == 12 and sorted(bodies) == sorted(t for ts in texts.values() for t in ts)
    async with h.services.sessions() as db:
        rows = list((await db.scalars(select(OutboundMessage))).all())
    assert len(rows) == 12 and len({r.sid for r in rows}) == 12 and all(r.sid for r in rows)


async def test_a_send_whose_moment_comes_after_send_max_age_is_dropped_and_counted(
        make_harness: Any) -> None:
    h = await make_harness(SEND_MAX_AGE_S="2")
    vt = VirtualTime()
    paced(h, vt, "sms=1")
    h.twilio.send_callbacks = False
    expired = metrics.SENDS_EXPIRED.labels("sms", "direct")
    before = expired._value.get()
    parents = await users(h, 5, 400, channel="sms")
    # Five SMS at once from a number that sends one a second, each allowed 2 s: the moments at
    # 0, 1 and 2 s go; the next two would leave 3 and 4 s after they were queued.
    results = await vt.run([send_to_user(h.services, u, text=f"Rappel pour {u.phone}") for u in parents])

    sent = [r for r in results if r.ok]
    dropped = [r for r in results if not r.ok]
    assert len(sent) == 3 and len(h.twilio.sent) == 3 and len(per_second(h, SMS_FROM)) == 3
    # What is left of their 2 s goes with them, so Twilio's own queue cannot hold them longer.
    assert [f["ValidityPeriod"] for f in h.twilio.sent] == ["2", "1", "1"]
    assert [r.reason for r in dropped] == ["expired", "expired"] and not any(r.sids for r in dropped)
    assert expired._value.get() - before == 2
    async with h.services.sessions() as db:
        rows = list((await db.scalars(select(OutboundMessage).where(OutboundMessage.sid.is_(None)))).all())
    assert [(r.status, r.error_code) for r in rows] == [("failed", "expired")] * 2
    assert all("SEND_MAX_AGE_S" in (r.last_error or "") for r in rows)


class _DownState:
    """A shared state that does not answer (Redis down): every reservation fails."""

    async def reserve(self, key: str, now_us: int, step_us: int, latest_us: int) -> int | None:
        raise redis.exceptions.ConnectionError("Connection refused")


async def test_with_the_shared_state_down_each_process_paces_alone() -> None:
    vt = VirtualTime()
    pacer = Pacer(_DownState(), SenderRates((("sms", 2),)), clock=vt, sleep=vt.sleep)  # type: ignore[arg-type]
    moments: list[float] = []

    async def send() -> None:
        assert await pacer.wait(SMS_FROM)
        moments.append(vt())

    await vt.run([send() for _ in range(5)])
    # Nothing stopped, and still two a second: 0, 0.5, 1, 1.5, 2 s after the start.
    assert [round(m - 1_000_000.0, 3) for m in moments] == [0.0, 0.5, 1.0, 1.5, 2.0]


async def test_an_sms_of_several_segments_takes_as_many_moments() -> None:
    # A long code sends 1 segment a second: a 3-segment SMS holds the number for 3 seconds.
    vt = VirtualTime()
    pacer = Pacer(None, SenderRates(DEFAULT_SENDER_MPS), clock=vt, sleep=vt.sleep)
    moments: list[float] = []

    async def send(units: int) -> None:
        assert await pacer.wait(SMS_FROM, units=units)
        moments.append(vt() - 1_000_000.0)

    await vt.run([send(3), send(1), send(2)])
    assert moments == [0.0, 3.0, 4.0]


async def test_a_chat_reply_does_not_wait_behind_a_background_wave() -> None:
    # A wave of ten SMS to parents (background) on a number that sends one a second, and a child's
    # reply asked for 2.5 s in: the wave books at most BATCH_AHEAD_S ahead, so the reply takes the
    # moment after those few, not the eleventh; the wave still goes whole, one a second.
    vt = VirtualTime()
    pacer = Pacer(None, SenderRates(DEFAULT_SENDER_MPS), clock=vt, sleep=vt.sleep)
    start = vt()
    wave: list[float] = []
    chat: list[float] = []

    async def wave_send() -> None:  # the wave's sends at once, as several processes' passes make them
        with as_background():
            assert await pacer.wait(SMS_FROM)
            wave.append(vt() - start)

    async def reply() -> None:
        await vt.sleep(2.5)
        assert await pacer.wait(SMS_FROM)
        chat.append(vt() - start)

    await vt.run([wave_send() for _ in range(10)] + [reply()])
    assert chat and chat[0] <= 2.5 + BATCH_AHEAD_S + 1
    moments = sorted(wave + chat)
    assert len(wave) == 10 and all(b - a >= 1 for a, b in itertools.pairwise(moments))


async def test_without_the_background_mark_a_queue_books_ahead_in_order() -> None:
    # The same ten sends made as chat book their moments at once: a reply asked later comes last.
    vt = VirtualTime()
    pacer = Pacer(None, SenderRates(DEFAULT_SENDER_MPS), clock=vt, sleep=vt.sleep)
    start = vt()
    chat: list[float] = []

    async def send(after: float) -> None:
        await vt.sleep(after)
        assert await pacer.wait(SMS_FROM)
        chat.append(vt() - start)

    await vt.run([send(0) for _ in range(10)] + [send(2.5)])
    assert chat[-1] == 10.0 and sorted(chat) == [float(n) for n in range(11)]
