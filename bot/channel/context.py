"""One inbound message as the handlers see it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel.buttons import Menu, send_menu
from bot.channel.outbound import SendResult, send_to_user
from bot.services import Services
from bot.storage.models import Conversation, InboundMessage, User, UserFile
from bot.texts import fr_en

# msg.extra: the names of what the message's arrival found the user has none of (`Incoming.lacks`).
LACKS = "lacks"
FILES_WAITING = "files_waiting"  # files kept for the user's next message (handlers.waiting_files)
UNTOLD = "assignments_untold"  # assignments nobody told the student of (handlers.assignment)


@dataclass
class Incoming:
    services: Services
    db: AsyncSession  # the worker commits it after the handler returns
    user: User
    conversation: Conversation
    inbound: InboundMessage
    channel: str  # whatsapp | sms | cli
    text: str  # Body with surrounding white space removed
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def lang(self) -> str:
        return self.user.language or "fr"

    def lacks(self, name: str) -> bool:
        """Whether the message's arrival found that the user has none of `name` (a row a handler
        would look for: bot.pipeline.messages reads such EXISTS with the user), so the handler
        need not read it."""
        return name in self.extra.get(LACKS, ())

    def t(self, fr: str, en: str) -> str:
        """French first, English for users who chose it."""
        return fr_en(self.lang, fr, en)

    async def reply(self, text: str = "", *, media: UserFile | None = None,
                    kind: str = "reply", menu: Menu | None = None) -> SendResult:
        """Sends to this user on this channel (bot.channel.outbound); returns what the send did.
        A `menu` goes as buttons or a list where it can (bot.channel.buttons), its body the text."""
        if menu is not None:
            text = menu.body
        prefix = self.extra.pop("reply_prefix", "") if text.strip() else ""
        if prefix:  # the first reply to a voice note starts with what was heard
            text = f"{prefix}\n\n{text}"
        if menu is not None and media is None:
            return await send_menu(self.services, self.user, replace(menu, body=text), channel=self.channel,
                                   kind=kind)
        return await send_to_user(self.services, self.user, text=text, media=media, channel=self.channel,
                                  kind=kind)
