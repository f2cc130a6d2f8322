"""What a turn holds back for a moment so that it leaves in one WhatsApp message instead of two or
three (each message is billed): the model's text, a quiz's menu, and a line that may ride with
the answer (handlers/session_start.py's review offer, `TRAILER`).

A quiz (or any menu a tool sends) waits for the text the model writes after it, and for the text it
wrote just before it (`QUIZ_TOOLS` start at once): the texts go first and the menu last, its
numbered options and « Réponds avec le numéro » right above its buttons, in one message while the
whole body fits a menu's 1,024 characters; else the text, then the menu. The model's text waits
only until the next event: a tool that starts (text before a tool call still goes before the tool
runs), a progress note, the turn's end. So the answer's last text and the trailer go together.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from bot.channel import formatting
from bot.channel.buttons import BODY_MAX, Menu
from bot.channel.context import Incoming
from bot.channel.outbound import SendResult
from bot.channel.streaming import message_count

# msg.extra's key for a line to send with the answer's last text (handlers/session_start.py).
TRAILER = "answer_trailer"


@dataclass
class Held:
    """The texts and at most one menu not sent yet, in the order they came."""

    msg: Incoming
    items: list[str | Menu] = field(default_factory=list)
    messages: int = 0  # the messages the held texts took once sent

    def text(self, text: str) -> None:
        if text.strip():
            self.items.append(text)

    async def menu(self, text: str, menu: Menu) -> SendResult:
        """Holds `menu` (its body `text`) for the text that follows it: `queued`, it goes for sure."""
        if any(isinstance(item, Menu) for item in self.items):
            await self.flush()
        self.items.append(replace(menu, body=text) if text.strip() else menu)
        return SendResult(channel=self.msg.channel, queued=True)

    async def flush(self, trailer: str = "") -> None:
        """Sends what is held, `trailer` after the texts, in as few messages as fit."""
        items, self.items = self.items, []
        texts = [item for item in items if isinstance(item, str)] + ([trailer] if trailer.strip() else [])
        menu = next((item for item in items if isinstance(item, Menu)), None)
        said = "\n\n".join(texts)
        if menu is None:
            if said:
                await self.msg.reply(said)
                self.messages += message_count(self.msg.channel, said)
            return
        body = f"{said}\n\n{menu.body}" if said else menu.body
        if len(formatting.to_whatsapp(body)) <= BODY_MAX:
            await self.msg.reply(kind="tool", menu=replace(menu, body=body))
            self.messages += 1 if said else 0
            return
        await self.msg.reply(said)
        self.messages += message_count(self.msg.channel, said)
        await self.msg.reply(kind="tool", menu=menu)


def trailer(msg: Incoming) -> str:
    """The line to send with the answer, taken: whoever takes it sends it."""
    value: Any = msg.extra.pop(TRAILER, "")
    return str(value or "")
