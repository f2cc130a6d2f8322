"""Menus as WhatsApp buttons or a list, through Twilio's Content API; numbered text otherwise.

A menu is a question (its numbered text, which stays in the message so that a typed « 2 » still
works) and its options. On WhatsApp inside the 24 h window, with WHATSAPP_BUTTONS on:
- up to 3 options whose labels fit 20 characters (true/false: Vrai / Faux) go as a
  `twilio/quick-reply`, one button per option;
- otherwise (4 options, longer labels, or options with descriptions) as a `twilio/list-picker`:
  an item of at most 24 characters, a description of at most 72; a label too long for an item goes
  in the description under a short title (« Réponse 1 »).

The contents are created once per shape (type and number of options) with every text a variable
(`{{1}}`…), kept in the shared state, and filled per menu with `ContentVariables`. Each button or
item carries the id `<menu id>:<number>`: the server maps a tap back to the option's number
(handlers/buttons.py), and an id of a menu no longer pending is refused there, not taken for the
newer menu. A refusal (content creation or the send: any 4xx/5xx, a Twilio error code) sends the
same menu as numbered text at once, logged and counted (`deblo_menus_total`); SMS always gets text.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from bot import metrics
from bot.channel import formatting
from bot.channel.outbound import SendResult, in_whatsapp_window, send_to_user
from bot.config import TWILIO_DEFAULT_API
from bot.services import Services
from bot.storage.models import User
from bot.texts import fr_en

__all__ = ["BODY_MAX", "LIST_PICKER", "QUICK_REPLY", "Menu", "content_kind", "content_variables", "send_menu",
           "tapped"]

log = logging.getLogger("bot.channel.buttons")

QUICK_REPLY = "twilio/quick-reply"
LIST_PICKER = "twilio/list-picker"
CONTENT_API = "https://content.twilio.com"
TITLE_MAX, ITEM_MAX, DESCRIPTION_MAX, BODY_MAX = 20, 24, 72, 1024
QUICK_REPLY_MAX, LIST_MAX = 3, 10  # buttons in a session message; items in a list
CACHE_TTL_S = 30 * 86400  # a content lives on at Twilio; recreated when a send says it is gone
_ID = re.compile(r"^([A-Za-z0-9_-]{1,64}):([1-9][0-9]?)$")
_GONE = frozenset({21655, 20404})  # the content sid is not known (any more)


@dataclass(frozen=True)
class Menu:
    """What to show: `body` (Markdown, numbered) and the options' labels in number order. An
    option's number, the one a tap gives back, is its place unless `numbers` says otherwise (a
    part of a longer menu keeps the numbers of the whole); `descriptions`, when given, go under a
    list's items instead of « Réponse n »."""

    menu_id: str
    body: str
    options: tuple[str, ...]
    language: str = "fr"
    numbers: tuple[int, ...] = ()
    descriptions: tuple[str, ...] = ()


def option_id(menu_id: str, number: int) -> str:
    return f"{menu_id}:{number}"


def tapped(params: Mapping[str, Any]) -> tuple[str, int] | None:
    """(menu id, option number) of a button or list reply (`ButtonPayload`, else `ListId`), or None."""
    for name in ("ButtonPayload", "ListId"):
        match = _ID.match(str(params.get(name) or "").strip())
        if match:
            return match.group(1), int(match.group(2))
    return None


def content_kind(menu: Menu) -> str | None:
    """The content type the menu fits, or None when it fits none (it goes as text)."""
    count = len(menu.options)
    if not 1 <= count <= LIST_MAX:
        return None
    short = all(len(label) <= TITLE_MAX for label in menu.options)
    if count <= QUICK_REPLY_MAX and short and len(set(menu.options)) == count and not menu.descriptions:
        return QUICK_REPLY
    return LIST_PICKER


def _shorten(text: str, limit: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _list_entry(label: str, number: int, language: str, description: str = "") -> tuple[str, str]:
    """(item, description) of one option: a long label goes whole in the description."""
    title = fr_en(language, f"Réponse {number}", f"Answer {number}")
    if len(label) <= ITEM_MAX:
        return label, _shorten(description, DESCRIPTION_MAX) if description else title
    return title, _shorten(label, DESCRIPTION_MAX)


def content_variables(kind: str, menu: Menu, body: str) -> dict[str, str]:
    """The values of the shape's variables for this menu (see `_types` for their places)."""
    values = [body]
    if kind == LIST_PICKER:
        values.append(fr_en(menu.language, "Choisir", "Choose"))
    for place, label in enumerate(menu.options, start=1):
        number = menu.numbers[place - 1] if menu.numbers else place
        if kind == QUICK_REPLY:
            values += [label, option_id(menu.menu_id, number)]
        else:
            given = menu.descriptions[place - 1] if menu.descriptions else ""
            item, description = _list_entry(label, number, menu.language, given)
            values += [item, option_id(menu.menu_id, number), description]
    return {str(i): value for i, value in enumerate(values, start=1)}


def _types(kind: str, count: int) -> dict[str, Any]:
    """The content of a shape, every text a variable: body {{1}}, then each choice's fields."""
    if kind == QUICK_REPLY:
        actions = [{"type": "QUICK_REPLY", "title": f"{{{{{2 + 2 * i}}}}}", "id": f"{{{{{3 + 2 * i}}}}}"}
                   for i in range(count)]
        return {QUICK_REPLY: {"body": "{{1}}", "actions": actions}}
    items = [{"item": f"{{{{{3 + 3 * i}}}}}", "id": f"{{{{{4 + 3 * i}}}}}",
              "description": f"{{{{{5 + 3 * i}}}}}"} for i in range(count)]
    return {LIST_PICKER: {"body": "{{1}}", "button": "{{2}}", "items": items}}


def _sample(kind: str, count: int) -> dict[str, str]:
    """Sample values Twilio keeps with the content (short, like the real ones)."""
    menu = Menu(menu_id="m", body="", options=tuple(f"Option {i + 1}" for i in range(count)))
    return content_variables(kind, menu, "Question")


def _content_base(services: Services) -> str:
    base = services.settings.twilio_api_base_url
    return CONTENT_API if not base or base == TWILIO_DEFAULT_API else base.rstrip("/")


def _cache_key(kind: str, count: int) -> str:
    return f"content:{kind}:{count}"


async def _create_content(services: Services, kind: str, count: int) -> str:
    """Creates the shape's content (`POST /v1/Content`); its HX… sid. Raises on any refusal."""
    settings = services.settings
    body = {"friendly_name": f"deblo_{kind.split('/')[1]}_{count}", "language": "fr",
            "variables": _sample(kind, count), "types": _types(kind, count)}
    login = aiohttp.encode_basic_auth(settings.twilio_account_sid, settings.twilio_auth_token)
    auth = {"Authorization": login}
    timeout = aiohttp.ClientTimeout(total=settings.twilio_timeout_s)
    async with aiohttp.ClientSession(timeout=timeout) as session, session.post(
            f"{_content_base(services)}/v1/Content", json=body, headers=auth) as resp:
        answer = await resp.json(content_type=None)
        sid = str(answer.get("sid", "")) if isinstance(answer, dict) else ""
        if resp.status >= 400 or not sid.startswith("HX"):
            code = answer.get("code") if isinstance(answer, dict) else None
            raise ContentRefused(f"content creation refused: HTTP {resp.status}", code=code)
        return sid


class ContentRefused(Exception):
    def __init__(self, message: str, *, code: object = None) -> None:
        super().__init__(message)
        self.code = code


async def _content_sid(services: Services, kind: str, count: int) -> str:
    key = _cache_key(kind, count)
    sid = await services.state.kv_get(key)
    if sid:
        return sid
    sid = await _create_content(services, kind, count)
    await services.state.kv_set(key, sid, CACHE_TTL_S)
    log.info("content created", extra={"content_type": kind, "options": count, "content_sid": sid})
    return sid


def _as_buttons(services: Services, user: User, channel: str) -> bool:
    settings = services.settings
    return (channel == "whatsapp" and settings.whatsapp_buttons and services.console is None
            and services.twilio.configured and in_whatsapp_window(services, user))


async def send_menu(services: Services, user: User, menu: Menu, *, channel: str | None = None,
                    kind: str = "reply") -> SendResult:
    """Sends the menu as buttons or a list where it can, else (or when refused) as numbered text."""
    channel = channel or user.last_channel or "whatsapp"
    shape = content_kind(menu)
    body = formatting.to_whatsapp(menu.body).strip()
    if shape is None or not _as_buttons(services, user, channel) or len(body) > BODY_MAX:
        return await send_to_user(services, user, text=menu.body, channel=channel, kind=kind)
    variables = content_variables(shape, menu, body)
    try:
        sid = await _content_sid(services, shape, len(menu.options))
    except (ContentRefused, aiohttp.ClientError, TimeoutError, ValueError) as exc:
        log.warning("menu content refused: sent as text", extra={"error": repr(exc)[:300],
                                                                  "content_type": shape})
        metrics.MENUS.labels("refused_create").inc()
        return await send_to_user(services, user, text=menu.body, channel=channel, kind=kind)
    result = await send_to_user(services, user, text=menu.body, channel=channel, kind=kind,
                                content=(sid, json.dumps(variables, ensure_ascii=False)))
    if result.accepted or result.queued or result.skipped:
        metrics.MENUS.labels("buttons" if shape == QUICK_REPLY else "list").inc()
        return result
    log.warning("menu send refused: sent as text", extra={"code": result.error_code, "error": result.error,
                                                           "content_type": shape})
    metrics.MENUS.labels("refused_send").inc()
    if result.error_code in _GONE:
        await services.state.kv_delete(_cache_key(shape, len(menu.options)))
    return await send_to_user(services, user, text=menu.body, channel=channel, kind=kind)
