"""The file library tests' services and users, with tool contexts whose deliveries are recorded
(made by the `lib` fixture of tests/files/conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.agent.toolspec import ToolContext
from bot.services import Services
from bot.storage.models import User, UserFile


@dataclass
class Library:
    services: Services
    users: list[User]
    sent: list[tuple[int, str, UserFile | None]] = field(default_factory=list)

    def ctx(self, user: User, *, channel: str = "whatsapp", language: str = "fr") -> ToolContext:
        async def deliver(text: str = "", media: UserFile | None = None) -> None:
            self.sent.append((user.id, text, media))

        return ToolContext(
            services=self.services,
            user_id=user.id,
            conversation_id=0,
            channel=channel,
            mode=user.mode,
            language=language,
            tool_call_id="call_1",
            deliver=deliver,
        )
