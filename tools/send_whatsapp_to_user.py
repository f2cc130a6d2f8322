"""send_whatsapp_to_user: a WhatsApp message (text and/or a document) to the CURRENT user.

Outside the 24-hour window the outbound path uses the approved template or falls back to SMS; the
result tells the model which channel was actually used.
"""

from __future__ import annotations

from typing import Any

from bot.toolspec import Tool, ToolContext, ToolResult
from tools.modes import modes_for
from tools.send_sms_to_user import send_to_current_user

NAME = "send_whatsapp_to_user"


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    return await send_to_current_user(ctx, args, "whatsapp")


TOOL = Tool(
    name=NAME,
    description=(
        "Send a WhatsApp message to the CURRENT user only: a recap, or one of their files "
        "(file_id). If WhatsApp cannot be used right now, it may go by SMS: the result says which "
        "channel was used; tell the user."
    ),
    parameters={
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "The text", "maxLength": 1000},
            "file_id": {"type": "integer", "description": "Optional id of one of the user's files"},
        },
        "required": ["message"],
        "additionalProperties": False,
    },
    modes=modes_for(NAME),
    run=run,
    side_effects=True,
    unavailable=lambda s: None if s.twilio_whatsapp_from else "TWILIO_WHATSAPP_FROM is not set",
)
