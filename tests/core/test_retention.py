"""Retention: rows and file bytes older than RETENTION_DAYS go, recent ones and the ledger stay, and
the conversation goes on. Time is moved with the injectable clock (bot/clock.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import select, update

from bot import library
from bot.cli import registered_jobs
from bot.config import ConfigError, load_settings
from bot.pipeline.retention import purge
from bot.storage.models import (
    Conversation,
    CreditEntry,
    InboundMessage,
    Message,
    OutboundMessage,
    ToolEffect,
    User,
    UserFile,
)
from tests.support.harness import Harness

PHONE = "+2250700000041"
OLD_CALL = {"id": "call_old", "type": "function", "function": {"name": "list_user_files", "arguments": "{}"}}


async def say(h: Harness, phone: str, body: str) -> list[str]:
    before = len(await h.texts_to(phone))
    status, _ = await h.inbound(phone, body)
    assert status == 200
    await h.settle()
    return (await h.texts_to(phone))[before:]


async def ids(h: Harness, model: Any) -> set[int]:
    async with h.services.sessions() as db:
        return set(await db.scalars(select(model.id)))


async def add_rows(h: Harness, user: User, tag: str) -> tuple[UserFile, dict[str, int]]:
    """One row of each purged kind, created now by the clock, and a file with its bytes."""
    now = h.clock()
    async with h.services.sessions() as db:
        conversation = await db.scalar(select(Conversation).where(Conversation.user_id == user.id))
        assert conversation is not None
        file = await library.add_file(h.services, db, user_id=user.id, name=f"{tag}.txt", mime="text/plain",
                                      data=f"devoir {tag}".encode(), origin="upload")
        rows: dict[str, Any] = {
            "message": Message(conversation_id=conversation.id, role="user", content=f"message {tag}",
                               created_at=now),
            "inbound": InboundMessage(message_sid=f"SM{tag}", user_id=user.id, channel="whatsapp",
                                      from_addr=f"whatsapp:{PHONE}", body=f"payload {tag}",
                                      params={"Body": tag}, status="done", created_at=now),
            "outbound": OutboundMessage(user_id=user.id, channel="whatsapp", to_addr=f"whatsapp:{PHONE}",
                                        body=f"sent {tag}", kind="reply", status="delivered", created_at=now),
            "effect": ToolEffect(key=f"effect:{tag}", user_id=user.id, tool="create_task", status="done",
                                 result={"success": True}, created_at=now),
        }
        db.add_all(rows.values())
        await db.commit()
        return file, {name: row.id for name, row in rows.items()}


async def test_old_rows_and_bytes_go_recent_ones_stay_and_the_conversation_goes_on(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, display_name="Awa")
    h.llm.push_text("Une fraction est une part d'un tout.")
    assert await say(h, PHONE, "Explique-moi les fractions") == ["Une fraction est une part d'un tout."]
    old_file, old = await add_rows(h, user, "old")
    async with h.services.sessions() as db:  # a tool call whose result comes after the cut-off
        conversation_id = await db.scalar(select(Conversation.id).where(Conversation.user_id == user.id))
        db.add(Message(conversation_id=conversation_id, role="assistant", tool_calls=[OLD_CALL],
                       created_at=h.clock()))
        await db.commit()
    before = {model: await ids(h, model) for model in (Message, InboundMessage, OutboundMessage, ToolEffect)}
    ledger = await ids(h, CreditEntry)
    old_path = h.stored_path(old_file.storage_key)
    assert old_path.exists()

    h.clock.advance(days=400)
    recent_file, recent = await add_rows(h, user, "recent")
    async with h.services.sessions() as db:
        db.add(Message(conversation_id=conversation_id, role="tool", tool_call_id="call_old",
                       content='{"files": []}', created_at=h.clock()))
        # « message recent » is the user's: the session is still open (no new one after SESSION_IDLE_S).
        await db.execute(update(Conversation).where(Conversation.id == conversation_id)
                         .values(last_user_message_at=h.clock()))
        await db.commit()
    await h.run_jobs("retention_purge")

    # Everything from before the cut-off is gone, rows and bytes; the recent rows are all there.
    for model, old_ids in before.items():
        assert await ids(h, model) & old_ids == set(), model.__tablename__
    for name, model in (("message", Message), ("inbound", InboundMessage), ("outbound", OutboundMessage),
                        ("effect", ToolEffect)):
        assert recent[name] in await ids(h, model), name
    assert await ids(h, UserFile) == {recent_file.id} and not old_path.exists()
    assert await library.read_bytes(h.services, recent_file) == b"devoir recent"
    # The ledger, the user and the conversation are kept.
    assert await ids(h, CreditEntry) == ledger and await h.user(PHONE) is not None
    assert await ids(h, Conversation) == {conversation_id}
    assert old["message"] not in await ids(h, Message) and old["inbound"] not in await ids(h, InboundMessage)

    # The conversation goes on: the model sees what is left, and a result whose call is gone is dropped.
    answer = "Les décimales sont une autre écriture des fractions."
    h.llm.push_text(answer)
    assert await say(h, PHONE, "Et les décimales ?") == [answer]
    sent = h.llm.requests[-1]["messages"]
    contents = [str(m.get("content")) for m in sent]
    assert "message recent" in contents and "Explique-moi les fractions" not in contents
    assert not any(m.get("role") == "tool" for m in sent)


async def test_the_newest_inbound_row_is_emptied_not_deleted(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    for text in ("Bonjour", "Combien font 2 + 2 ?"):
        h.llm.push_text("Réponse.")
        await say(h, PHONE, text)
    inbound = sorted(await ids(h, InboundMessage))
    h.clock.advance(days=366)
    report = await purge(h.services, h.clock())
    assert report.deleted["inbound_messages"] == len(inbound)  # one deleted per row, the last emptied
    async with h.services.sessions() as db:
        [kept] = (await db.scalars(select(InboundMessage))).all()
        assert await db.scalar(select(OutboundMessage.id)) is None
    assert kept.id == inbound[-1] and kept.body == "" and kept.params is None and kept.from_addr == ""
    # Its id is never given again: the ledger's turn:<id> references stay unique.
    h.llm.push_text("4.")
    assert await say(h, PHONE, "Et 3 + 3 ?") == ["4."]
    assert max(await ids(h, InboundMessage)) > kept.id
    # No longer the newest, the emptied row goes at the next run; the new one stays.
    newest = max(await ids(h, InboundMessage))
    assert (await purge(h.services, h.clock())).deleted["inbound_messages"] == 1
    assert await ids(h, InboundMessage) == {newest}
    assert (await purge(h.services, h.clock())).deleted["inbound_messages"] == 0


async def test_two_processes_purging_at_once_delete_each_row_once(make_harness: Any) -> None:
    h = await make_harness()
    other = await make_harness(DATA_DIR=str(h.settings.data_dir))  # the same file store, as in production
    user = await h.make_user(PHONE)
    h.llm.push_text("Bonjour !")
    await say(h, PHONE, "Salut")
    files = []
    for i in range(3):
        file, _ = await add_rows(h, user, f"old{i}")
        files.append(h.stored_path(file.storage_key))
    messages, outbound = len(await ids(h, Message)), len(await ids(h, OutboundMessage))
    h.clock.advance(days=400)
    other.clock.now = h.clock.now
    reports = await asyncio.gather(purge(h.services, h.clock()), purge(other.services, other.clock()))
    assert sum(r.deleted["messages"] for r in reports) == messages
    assert sum(r.deleted["outbound_messages"] for r in reports) == outbound
    assert sum(r.deleted["user_files"] for r in reports) == 3
    assert sum(r.deleted["tool_effects"] for r in reports) == 3
    assert await ids(h, UserFile) == set() and not any(path.exists() for path in files)


async def test_recent_data_is_left_alone(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    h.llm.push_text("Bonjour !")
    await say(h, PHONE, "Salut")
    file, _ = await add_rows(h, user, "young")
    counts = {m: await ids(h, m) for m in (Message, InboundMessage, OutboundMessage, ToolEffect, UserFile)}
    h.clock.advance(days=364)
    report = await purge(h.services, h.clock())
    assert report.total == 0
    assert {m: await ids(h, m) for m in counts} == counts
    assert h.stored_path(file.storage_key).exists()


async def test_retention_days_is_a_setting(make_harness: Any) -> None:
    h = await make_harness(RETENTION_DAYS="30")
    user = await h.make_user(PHONE)
    h.llm.push_text("Bonjour !")
    await say(h, PHONE, "Salut")
    await add_rows(h, user, "month")
    h.clock.advance(days=31)
    report = await purge(h.services, h.clock())
    assert report.deleted["user_files"] == 1 and report.deleted["messages"] >= 1
    assert "retention_purge" in [job.name for job in registered_jobs()]


@pytest.mark.parametrize("raw", ["0", "-5", "un an"])
def test_retention_days_must_be_a_positive_number(raw: str) -> None:
    with pytest.raises(ConfigError, match="RETENTION_DAYS"):
        load_settings({"RETENTION_DAYS": raw})
    assert load_settings({}).retention_days == 365
