"""Files for the tests of the send path: a stored file of the user's, and a tool's context whose
`deliver` goes through the real outbound path."""

from __future__ import annotations

from bot.agent.toolspec import ToolContext
from bot.channel.outbound import SendResult, send_to_user
from bot.storage.models import User, UserFile
from tests.support.harness import Harness, new_sid


async def make_file(h: Harness, user: User, name: str, mime: str, data: bytes) -> UserFile:
    key = f"users/{user.id}/test-{new_sid('F')}"
    await h.services.files.put(key, data)
    async with h.services.sessions() as db:
        row = UserFile(user_id=user.id, name=name, mime=mime, size=len(data), origin="generated",
                       storage_key=key, created_at=h.clock())
        db.add(row)
        await db.commit()
        return row


def ctx_for(h: Harness, user: User, channel: str) -> ToolContext:
    async def deliver(text: str = "", media: UserFile | None = None) -> SendResult:
        return await send_to_user(h.services, user, text=text, media=media, channel=channel, kind="tool")

    return ToolContext(
        services=h.services,
        user_id=user.id,
        conversation_id=0,
        channel=channel,
        mode=user.mode,
        language=user.language,
        deliver=deliver,
    )
