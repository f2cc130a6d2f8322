"""No poison in the spool: a webhook the database would refuse is cleaned at the door, an entry
that still cannot be stored is set aside in `dead.jsonl` (and can be replayed by the operator),
and a torn or short spool write never loses or blocks the webhooks behind it.

Run on both backends: PostgreSQL refuses a NUL byte that SQLite stores.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode

import pytest
from sqlalchemy import select, text

from bot import metrics
from bot.channel.inbound import clean_form, clean_text, has_control
from bot.channel.spool import Spool, SpoolEntry, encode
from bot.config import ConfigError, load_settings
from bot.storage.models import InboundMessage, Message, User
from tests.support.console import console, users
from tests.support.harness import Harness
from tests.support.waiting import eventually

PHONE = "+2250700000091"
OTHER = "+2250700000092"
AT = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
SPOOLING = {"SPOOL_AFTER_S": "0.5", "SPOOL_REPLAY_S": "0.1"}


async def stored(h: Harness) -> list[tuple[str, str | None]]:
    async with h.services.sessions() as db:
        rows = (await db.scalars(select(InboundMessage).order_by(InboundMessage.id))).all()
        return [(row.body, (row.params or {}).get("ProfileName")) for row in rows]


def spool_lines(h: Harness) -> int:
    spool = Path(h.settings.data_dir) / "spool"
    return sum(len(p.read_bytes().splitlines()) for p in spool.glob("inbound*.jsonl"))


def dead_lines(h: Harness) -> list[bytes]:
    dead = Path(h.settings.data_dir) / "spool" / "dead.jsonl"
    return dead.read_bytes().splitlines() if dead.exists() else []


async def refuse_bodies(h: Harness, prefix: str) -> None:
    """A real refusal by the database: a trigger failing the insert of such a message."""
    async with h.services.engine.begin() as conn:
        if h.services.engine.dialect.name == "postgresql":
            await conn.execute(text(
                "CREATE OR REPLACE FUNCTION refuse_body() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF NEW.body LIKE '{prefix}%' THEN "
                "RAISE EXCEPTION 'refused' USING ERRCODE = 'check_violation'; END IF; RETURN NEW; END $$"))
            await conn.execute(text("DROP TRIGGER IF EXISTS refuse_body ON inbound_messages"))
            await conn.execute(text("CREATE TRIGGER refuse_body BEFORE INSERT ON inbound_messages "
                                    "FOR EACH ROW EXECUTE FUNCTION refuse_body()"))
        else:
            await conn.execute(text(f"CREATE TRIGGER refuse_body BEFORE INSERT ON inbound_messages WHEN "
                                    f"NEW.body LIKE '{prefix}%' BEGIN SELECT RAISE(ABORT, 'refused'); END"))


async def accept_bodies(h: Harness) -> None:
    """The refusal gone (also run at the end: on PostgreSQL the tests share one database)."""
    async with h.services.engine.begin() as conn:
        if h.services.engine.dialect.name == "postgresql":
            await conn.execute(text("DROP TRIGGER IF EXISTS refuse_body ON inbound_messages"))
            await conn.execute(text("DROP FUNCTION IF EXISTS refuse_body()"))
        else:
            await conn.execute(text("DROP TRIGGER IF EXISTS refuse_body"))


@pytest.fixture
async def refusing(make_harness: Callable[..., Awaitable[Harness]]) -> AsyncIterator[list[Harness]]:
    made: list[Harness] = []
    yield made
    for h in made:
        await accept_bodies(h)


async def spool_retry(h: Harness) -> tuple[int, str]:
    """`python -m bot spool retry` as the operator runs it, with the harness's settings."""
    run = await console(h, "spool", "retry")
    return run.code, run.out


async def bodies(h: Harness) -> list[str]:
    return [body for body, _ in await stored(h)]


# --- 1. text cleaned at the door -------------------------------------------------------------


def test_control_characters_go_and_a_lone_surrogate_is_replaced() -> None:
    assert clean_text("a\x00b\x01c\x1fd\x7f\te\r\nf") == "abcd\x7f\te\r\nf"
    assert clean_text("x\ud800y") == "x\ufffdy"
    assert clean_text("é — ok") == "é — ok"
    assert clean_form([("Bo\x00dy", "\x00"), ("To", "+1")]) == [("Body", ""), ("To", "+1")]


def test_the_raw_body_says_when_cleaning_is_needed() -> None:
    """The webhook skips `clean_form` for a body with no control character, raw or
    percent-encoded: for every ASCII character, and spelled either way, the raw check and
    `clean_text` agree."""
    for code in range(128):
        char = chr(code)
        changed = clean_text(f"a{char}b") != f"a{char}b"
        for raw in (urlencode({"Body": f"a{char}b"}).encode(), f"Body=a%{code:02x}b".encode(),
                    f"Body=a%{code:02X}b".encode()):
            assert has_control(raw) is changed, (code, raw)
        if char not in "&=%+":  # those mean something unencoded
            assert has_control(f"Body=a{char}b".encode()) is changed, code


async def test_a_nul_byte_in_a_signed_webhook_is_removed_and_the_next_webhook_is_stored(
    harness: Harness,
) -> None:
    h = harness
    await h.make_user(PHONE)
    h.llm.push_text("Réponse 1.")
    h.llm.push_text("Réponse 2.")
    status, body = await h.inbound(PHONE, "Bon\x00jour\x08 à\ttous\r\n", extra={"ProfileName": "A\x00mi"})
    assert status == 200 and "<Response" in body
    await h.settle()
    assert (await h.inbound(PHONE, "Merci"))[0] == 200
    await h.settle()

    async def both_answered() -> bool:
        return len(await h.texts_to(PHONE)) >= 2

    await eventually(both_answered)
    assert await stored(h) == [("Bonjour à\ttous\r\n", "Ami"), ("Merci", None)]
    assert await h.texts_to(PHONE) == ["Réponse 1.", "Réponse 2."]
    assert spool_lines(h) == 0  # stored at once, not queued behind anything


async def test_a_nul_byte_spooled_before_the_cleaning_is_cleaned_on_replay(
    make_harness: Callable[..., Awaitable[Harness]],
) -> None:
    h = await make_harness(**SPOOLING)
    await h.make_user(PHONE)
    h.llm.push_text("Réponse.")
    form = [("MessageSid", "SM" + "2" * 32), ("From", f"whatsapp:{PHONE}"), ("Body", "Sa\u0000lut")]
    line = json.dumps({"kind": "inbound", "at": AT.isoformat(), "form": form}).encode() + b"\n"
    spool = Path(h.settings.data_dir) / "spool"
    spool.mkdir(parents=True, exist_ok=True)
    (spool / "inbound.jsonl").write_bytes(line)  # a bare JSON line: the format before the header

    async def replayed() -> bool:
        return await bodies(h) == ["Salut"] and not spool_lines(h)

    await eventually(replayed)
    assert dead_lines(h) == []


# --- 2. an entry the database refuses is set aside -------------------------------------------


async def test_an_entry_refused_max_attempts_times_is_set_aside_and_retried_by_the_operator(
    make_harness: Callable[..., Awaitable[Harness]], refusing: list[Harness],
) -> None:
    h = await make_harness(**SPOOLING, SPOOL_MAX_ATTEMPTS="3")
    refusing.append(h)
    await h.make_user(PHONE)
    await refuse_bodies(h, "Poison")
    for n in range(2):
        h.llm.push_text(f"Réponse {n}.")
    dead_before = metrics.SPOOL_DEAD._value.get()
    assert (await h.inbound(PHONE, "Poison"))[0] == 200  # refused: spooled
    assert (await h.inbound(PHONE, "Bonjour"))[0] == 200  # spooled behind it

    async def good_one_stored() -> bool:
        return await bodies(h) == ["Bonjour"] and not spool_lines(h)

    await eventually(good_one_stored)
    [line] = dead_lines(h)
    record = json.loads(line.split(b" ", 2)[2])
    assert dict(record["entry"]["form"])["Body"] == "Poison" and "refused" in record["reason"]
    assert metrics.SPOOL_DEAD._value.get() == dead_before + 1

    # The operator, once the cause is gone.
    code, out = await spool_retry(h)
    assert code == 1 and "0 stored, 1 still dead" in out  # still refused: stays dead
    assert len(dead_lines(h)) == 1
    await accept_bodies(h)
    code, out = await spool_retry(h)
    assert code == 0 and "1 stored, 0 still dead" in out
    assert await bodies(h) == ["Bonjour", "Poison"] and dead_lines(h) == []


async def test_an_erased_number_leaves_the_spool_and_spool_retry_never_brings_it_back(
    make_harness: Callable[..., Awaitable[Harness]], refusing: list[Harness],
) -> None:
    h = await make_harness(**SPOOLING, SPOOL_MAX_ATTEMPTS="1")
    refusing.append(h)
    h.llm.push_text("Bonjour !")
    assert (await h.inbound(PHONE, "Bonjour"))[0] == 200
    await h.settle()
    await refuse_bodies(h, "Poison")
    assert (await h.inbound(PHONE, "Poison: mon adresse est 12 rue des Jardins"))[0] == 200
    assert (await h.inbound(OTHER, f"Poison: le numéro de mon ami est {PHONE}"))[0] == 200

    async def both_set_aside() -> bool:
        return len(dead_lines(h)) == 2 and not spool_lines(h)

    await eventually(both_set_aside)
    [theirs] = [line for line in dead_lines(h) if f"whatsapp:{PHONE}".encode() in line]
    await accept_bodies(h)
    sent_before = len(h.twilio.to(PHONE))

    run = await users(h, "forget", PHONE)
    assert run.code == 0 and "1 spooled webhook(s) removed" in run.out, run
    spool = Path(h.settings.data_dir) / "spool"
    assert all(PHONE.encode() not in p.read_bytes() for p in spool.iterdir())  # no trace on the disk
    [kept] = dead_lines(h)  # the other person's, the number masked as in the tables
    assert dict(json.loads(kept.split(b" ", 2)[2])["entry"]["form"])["Body"] == \
        "Poison: le numéro de mon ami est [effacé]"

    # The set-aside webhook comes back (a copy of dead.jsonl made before the erasure, restored):
    # `spool retry` stores the other person's and drops the erased number's.
    with (spool / "dead.jsonl").open("ab") as dead:
        dead.write(theirs + b"\n")
    code, out = await spool_retry(h)
    assert code == 0 and "1 stored, 0 still dead" in out and "1 dropped" in out, out
    await h.settle()
    async with h.services.sessions() as db:
        assert await db.scalar(select(User.id).where(User.phone == PHONE)) is None
        rows = (await db.scalars(select(InboundMessage))).all()
        assert [r.body for r in rows] == ["Poison: le numéro de mon ami est [effacé]"]
        assert all(PHONE not in (m.content or "") for m in (await db.scalars(select(Message))).all())
    assert len(h.twilio.to(PHONE)) == sent_before  # the bot wrote nothing more to the number


def test_a_bad_max_attempts_is_refused() -> None:
    assert load_settings({}).spool_max_attempts == 5
    with pytest.raises(ConfigError, match="SPOOL_MAX_ATTEMPTS must be 1 or more"):
        load_settings({"SPOOL_MAX_ATTEMPTS": "0"})


# --- 3. a torn or short write loses nothing behind it ----------------------------------------


def entry(n: int) -> SpoolEntry:
    return SpoolEntry("inbound", AT, [("MessageSid", f"SM{n:032d}"), ("Body", f"message {n}\n«é»")])


async def test_a_torn_line_is_set_aside_and_the_line_after_it_is_replayed(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", 1_000_000)
    spool.directory.mkdir()
    old = json.dumps({"kind": "inbound", "at": AT.isoformat(), "form": entry(0).form}).encode() + b"\n"
    torn = encode(entry(1))[:30]  # a crash in the middle of the write: no newline
    bad_sum = encode(entry(2)).replace(b"message 2", b"message X")  # whole line, wrong checksum
    spool.path.write_bytes(old + torn + encode(entry(3)) + bad_sum + encode(entry(4)))
    seen: list[SpoolEntry] = []

    async def handle(e: SpoolEntry) -> None:
        seen.append(e)

    assert await spool.replay(handle) == 3
    assert seen == [entry(0), entry(3), entry(4)] and not spool.pending
    dead = [json.loads(line.split(b" ", 2)[2]) for line in spool.dead.read_bytes().splitlines()]
    assert [base64.b64decode(d["raw"]) for d in dead] == [torn, bad_sum]
    assert await spool.replay(handle) == 0 and len(seen) == 3  # set aside once


async def test_a_short_spool_write_is_not_acknowledged_and_leaves_no_torn_bytes(
    make_harness: Callable[..., Awaitable[Harness]], refusing: list[Harness], monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = await make_harness(**SPOOLING, SPOOL_MAX_ATTEMPTS="1000")
    refusing.append(h)
    await h.make_user(PHONE)
    await refuse_bodies(h, "Refusé")  # every such webhook is spooled
    h.llm.push_text("Réponse 1.")
    h.llm.push_text("Réponse 2.")
    real_write = os.write

    def half(fd: int, data: bytes | memoryview) -> int:  # a full disk: the OS takes half
        if bytes(data).endswith(b"\n") and b'"kind":"inbound"' in bytes(data):
            return real_write(fd, bytes(data)[: len(data) // 2])
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", half)
    sid = "SM" + "1" * 32
    status, _ = await h.inbound(PHONE, "Refusé 1", sid=sid)
    assert status == 503  # not acknowledged: Twilio retries
    monkeypatch.setattr(os, "write", real_write)
    spool = Path(h.settings.data_dir) / "spool"
    assert (spool / "inbound.jsonl").read_bytes() == b""  # cut back: no torn bytes
    assert (await h.inbound(PHONE, "Refusé 2"))[0] == 200
    assert spool_lines(h) == 1
    await accept_bodies(h)
    assert (await h.inbound(PHONE, "Refusé 1", sid=sid))[0] == 200  # Twilio's retry

    async def both_stored() -> bool:
        return sorted(await bodies(h)) == ["Refusé 1", "Refusé 2"] and not spool_lines(h)

    await eventually(both_stored)
    assert await bodies(h) == ["Refusé 2", "Refusé 1"] and dead_lines(h) == []
