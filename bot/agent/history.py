"""The conversation as the model sees it, loaded from and saved to the `messages` table.

Everything the loop does is saved as it happens (the user's message, each assistant message with
its tool calls together with their results, the answer), so a restarted process continues the
conversation where it stopped. Loading keeps the most recent messages within a token budget and
never separates a tool call from its result; a call left without a result (a crash mid-turn) gets
a synthetic "interrupted" result so that providers accept the history.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.agent.thinking import strip_thinking
from bot.agent.truncation import message_tokens
from bot.storage.models import Message

INTERRUPTED = json.dumps({"success": False, "error": "interrupted: this tool call did not complete"})
# Rows read per query while walking back through a long conversation.
_PAGE = 200
TOOL_IDS = "history.tool_ids"  # `load`'s `known`: the ids of every tool result of the conversation


def row_to_message(row: Message) -> dict[str, Any] | None:
    if row.role == "user":
        return {"role": "user", "content": row.content or ""}
    if row.role == "assistant":
        # A reply saved before think blocks were filtered out must not bring them back to the model.
        content = row.content
        if content and strip_thinking(content) != content:
            content = strip_thinking(content).strip() or None
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if row.tool_calls:
            message["tool_calls"] = row.tool_calls
        elif not content:
            return None
        return message
    if row.role == "tool":
        return {"role": "tool", "tool_call_id": row.tool_call_id or "", "content": row.content or ""}
    if row.role == "note":  # context the bot added (e.g. "the user sent a file"): shown as system
        return {"role": "system", "content": row.content or ""}
    return None


def _blocks(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Groups an assistant message with tool calls and exactly one result per call."""
    blocks: list[list[dict[str, Any]]] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        if m["role"] == "tool":  # a result whose call is not in the window: useless alone
            i += 1
            continue
        if m["role"] == "assistant" and m.get("tool_calls"):
            results: dict[str, dict[str, Any]] = {}
            j = i + 1
            while j < len(messages) and messages[j]["role"] == "tool":
                results.setdefault(messages[j]["tool_call_id"], messages[j])
                j += 1
            block = [m]
            for call in m["tool_calls"]:
                block.append(
                    results.get(call.get("id", ""))
                    or {"role": "tool", "tool_call_id": call.get("id", ""), "content": INTERRUPTED}
                )
            blocks.append(block)
            i = j
            continue
        blocks.append([m])
        i += 1
    return blocks


async def load(
    db: AsyncSession, conversation_id: int, budget_tokens: int, known: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The most recent messages of the conversation that fit in `budget_tokens`, oldest first.
    With `known`: when every message of the conversation was read, the ids its tool results
    took go to `known[TOOL_IDS]` (`used_tool_call_ids` then asks nothing)."""
    rows: list[Message] = []
    used = 0
    before: int | None = None
    whole = False
    while used < budget_tokens:
        query = select(Message).where(Message.conversation_id == conversation_id)
        if before is not None:
            query = query.where(Message.id < before)
        page = list((await db.scalars(query.order_by(Message.id.desc()).limit(_PAGE))).all())
        whole = len(page) < _PAGE
        rows.extend(page)
        used += sum(message_tokens({"content": row.content, "tool_calls": row.tool_calls}) for row in page)
        if whole:
            break
        before = page[-1].id
    if known is not None and whole:
        known[TOOL_IDS] = {row.tool_call_id for row in rows if row.role == "tool" and row.tool_call_id}
    rows.reverse()
    messages = [m for m in (row_to_message(r) for r in rows) if m is not None]
    blocks = _blocks(messages)
    kept: list[list[dict[str, Any]]] = []
    total = 0
    for block in reversed(blocks):
        size = sum(message_tokens(m) for m in block)
        if total + size > budget_tokens and kept:
            break
        kept.append(block)
        total += size
    kept.reverse()
    out = [m for block in kept for m in block]
    # A window must not start with an answer to something it does not contain.
    while out and out[0]["role"] == "assistant" and not out[0].get("tool_calls") and len(out) > 1:
        out.pop(0)
    return out


_SAVED = ("conversation_id", "role", "content", "tool_calls", "tool_call_id", "name", "inbound_id")


def to_row(conversation_id: int, message: dict[str, Any], inbound_id: int | None = None) -> Message:
    role = message["role"]
    if role == "system":
        role = "note"
    return Message(
        conversation_id=conversation_id,
        role=role,
        content=message.get("content"),
        tool_calls=message.get("tool_calls") or None,
        tool_call_id=message.get("tool_call_id"),
        name=message.get("name"),
        inbound_id=inbound_id,
    )


async def save(
    db: AsyncSession, conversation_id: int, messages: list[dict[str, Any]], inbound_id: int | None = None
) -> None:
    """Adds `messages` to the conversation: one INSERT for them all (no ids asked back, so that
    SQLite too takes them in one statement), in the caller's transaction."""
    if not messages:
        return
    rows = [to_row(conversation_id, message, inbound_id) for message in messages]
    # The table's insert, not the entity's: the ORM's bulk insert splits rows by their None values.
    values = [{name: getattr(row, name) for name in _SAVED} for row in rows]
    await db.execute(insert(Message.__table__), values)


async def used_tool_call_ids(
    db: AsyncSession, conversation_id: int, known: dict[str, Any] | None = None
) -> set[str]:
    """The ids the conversation's tool results took; as `load` found them when it read them all."""
    if known is not None and TOOL_IDS in known:
        return set(known[TOOL_IDS])
    rows = await db.scalars(
        select(Message.tool_call_id).where(Message.conversation_id == conversation_id, Message.role == "tool")
    )
    return {r for r in rows if r}


async def user_message_saved(db: AsyncSession, conversation_id: int, inbound_id: int) -> bool:
    """True when this inbound message's turn already started (a retry after a crash)."""
    found = await db.scalar(
        select(Message.id)
        .where(
            Message.conversation_id == conversation_id,
            Message.inbound_id == inbound_id,
            Message.role == "user",
        )
        .limit(1)
    )
    return found is not None


async def tool_calls_saved(db: AsyncSession, conversation_id: int, inbound_id: int) -> int:
    """How many tool calls this inbound message's turn saved so far (earlier runs of the turn)."""
    rows = await db.scalars(
        select(Message.tool_calls).where(
            Message.conversation_id == conversation_id,
            Message.inbound_id == inbound_id,
            Message.role == "assistant",
        )
    )
    return sum(len(calls) for calls in rows if calls)
