"""The one pending numbered menu of a conversation (a quiz, the credit packs…).

WhatsApp has no buttons here, so a menu is numbered text and the user answers with a number.
Only one menu is pending per conversation: a new one replaces the previous, so "2" always means
the last menu the user saw.
"""

from __future__ import annotations

import json
from typing import Any

from bot.storage.state import State


def _key(conversation_id: int) -> str:
    return f"menu:{conversation_id}"


def _expired_key(conversation_id: int) -> str:
    return f"menu-expired:{conversation_id}"


async def set_menu(state: State, conversation_id: int, kind: str, data: dict[str, Any], ttl_s: float) -> None:
    payload = json.dumps({"kind": kind, **data}, ensure_ascii=False)
    await state.kv_set(_key(conversation_id), payload, ttl_s)
    # Remembered longer than the menu itself, so that a late answer gets a hint, not silence.
    await state.kv_set(_expired_key(conversation_id), kind, ttl_s * 24)


async def get_menu(state: State, conversation_id: int) -> dict[str, Any] | None:
    raw = await state.kv_get(_key(conversation_id))
    return None if raw is None else json.loads(raw)


async def clear_menu(state: State, conversation_id: int) -> None:
    await state.kv_delete(_key(conversation_id))
    await state.kv_delete(_expired_key(conversation_id))


async def expired_menu_kind(state: State, conversation_id: int) -> str | None:
    """The kind of a menu that was shown and has since expired (still unanswered), if any."""
    if await state.kv_get(_key(conversation_id)) is not None:
        return None
    return await state.kv_get(_expired_key(conversation_id))
